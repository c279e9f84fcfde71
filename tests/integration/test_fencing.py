"""Fencing every write (DESIGN G1-G4, G7) through the real gateway to RGW with
real clients.  Grants are recorded in the gateway's election cache with
tests/helpers/store_seed, as the election does on every acquire; what is
tested here is the fence itself: what reaches RGW, what is refused, audited
and remembered across kill -9."""

import os
import socket
import struct
import subprocess
import threading
import time

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import gateway_bin
from rawhttp import recv_answer
from relay import DelayRelay

LOCK = "orders"


def build_dir():
    return os.environ.get("FENCEGATE_BUILD") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build")


def grant(gw, epoch, lock=LOCK):
    """Record that epoch was granted for lock (what an acquire does)."""
    r = subprocess.run([os.path.join(build_dir(), "tests/helpers/store_seed"), str(gw.data_dir),
                        lock, str(epoch)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


@pytest.fixture
def fgw(gateway, bucket):
    rules = {"fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                         "require_token": True}]}
    return gateway(rules)


def rgw_body(rgw, bucket, key):
    try:
        return rgw.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError:
        return None


def code_of(resp):
    t = resp.text if hasattr(resp, "text") else resp
    return t.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in t else None


def audit(gw, **params):
    r = requests.get(f"{gw.url}/_fencegate/v1/audit", params=params, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["records"]


def fences(gw):
    r = requests.get(f"{gw.url}/_fencegate/v1/fences", timeout=10)
    assert r.status_code == 200, r.text
    return {f["lock"]: f["token"] for f in r.json()["fences"]}


def boto3_with_token(gw, token, lock=LOCK):
    """boto3 adding X-Fencing-* in a before-sign hook, as a worker would."""
    c = gw.client()

    def add(request, **kwargs):
        request.headers["X-Fencing-Token"] = str(token)
        request.headers["X-Fencing-Lock"] = lock
    c.meta.events.register("before-sign.s3.*", add)
    return c


def wait_audit(gw, n, **params):
    for _ in range(100):
        recs = audit(gw, **params)
        if sum(r["count"] for r in recs) >= n:  # identical refusals share a record
            return recs
        time.sleep(0.05)
    return audit(gw, **params)


def test_zombie_story_boto3(fgw, rgw, bucket):
    gw = fgw
    grant(gw, 1)
    a = boto3_with_token(gw, 1)
    r = a.put_object(Bucket=bucket, Key="orders/o1", Body=b"A epoch 1")
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-fencing-current-token"] == "1"
    head = rgw.client().head_object(Bucket=bucket, Key="orders/o1")
    assert head["Metadata"]["fencing-epoch"] == "1"  # which leader wrote it

    grant(gw, 2)  # A paused past its lease; B acquired epoch 2
    b = boto3_with_token(gw, 2)
    b.put_object(Bucket=bucket, Key="orders/o1", Body=b"B epoch 2")

    with pytest.raises(ClientError) as e:  # A wakes up and writes with its old token
        a.put_object(Bucket=bucket, Key="orders/o1", Body=b"A zombie")
    err = e.value.response
    assert err["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert err["Error"]["Code"] == "StaleFencingToken"
    assert err["Error"]["CurrentToken"] == "2" and err["Error"]["Token"] == "1"
    assert rgw_body(rgw, bucket, "orders/o1") == b"B epoch 2"

    recs = wait_audit(gw, 1, lock=LOCK)
    assert [(r["kind"], r["token"], r["current_token"], r["key"]) for r in recs] == \
        [("stale", 1, 2, "orders/o1")]
    assert fences(gw)[LOCK] == 2


def test_zombie_story_aws_cli(fgw, rgw, bucket, tmp_path):
    gw = fgw
    f = tmp_path / "body"
    grant(gw, 5)
    f.write_bytes(b"leader 5")
    r = gw.aws(["s3api", "put-object", "--bucket", bucket, "--key", "orders/cli", "--body", str(f),
                "--metadata", f"fencing-token=5,fencing-lock={LOCK}"])
    assert r.returncode == 0, r.stderr
    grant(gw, 6)
    f.write_bytes(b"leader 6")
    r = gw.aws(["s3api", "put-object", "--bucket", bucket, "--key", "orders/cli", "--body", str(f),
                "--metadata", "fencing-token=6"])  # the rule supplies the lock
    assert r.returncode == 0, r.stderr
    f.write_bytes(b"zombie 5")
    r = gw.aws(["s3api", "put-object", "--bucket", bucket, "--key", "orders/cli", "--body", str(f),
                "--metadata", "fencing-token=5"])
    assert r.returncode != 0
    assert "StaleFencingToken" in r.stderr
    assert rgw_body(rgw, bucket, "orders/cli") == b"leader 6"
    out = subprocess.run([gateway_bin(), "audit", "--data-dir", str(gw.data_dir), "--json"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr


def test_zombie_story_s3cmd(fgw, rgw, bucket, tmp_path):
    gw = fgw
    f = tmp_path / "body"
    grant(gw, 3)
    f.write_bytes(b"leader 3")
    r = gw.s3cmd(["put", str(f), f"s3://{bucket}/orders/s3cmd", "--add-header=X-Fencing-Token:3"])
    assert r.returncode == 0, r.stderr
    grant(gw, 4)
    f.write_bytes(b"leader 4")
    r = gw.s3cmd(["put", str(f), f"s3://{bucket}/orders/s3cmd", "--add-header=X-Fencing-Token:4"])
    assert r.returncode == 0, r.stderr
    f.write_bytes(b"zombie 3")
    r = gw.s3cmd(["put", str(f), f"s3://{bucket}/orders/s3cmd", "--add-header=X-Fencing-Token:3"])
    assert r.returncode != 0
    assert rgw_body(rgw, bucket, "orders/s3cmd") == b"leader 4"


def test_forged_token_refused_fence_unmoved(fgw, rgw, bucket):
    gw = fgw
    grant(gw, 1)
    boto3_with_token(gw, 1).put_object(Bucket=bucket, Key="orders/f", Body=b"real")
    with pytest.raises(ClientError) as e:
        boto3_with_token(gw, 10**15).put_object(Bucket=bucket, Key="orders/f", Body=b"forged")
    assert e.value.response["Error"]["Code"] == "FencingTokenNotGranted"
    assert fences(gw)[LOCK] == 1
    boto3_with_token(gw, 1).put_object(Bucket=bucket, Key="orders/f", Body=b"real again")
    assert rgw_body(rgw, bucket, "orders/f") == b"real again"
    recs = wait_audit(gw, 1, lock=LOCK)
    assert recs[-1]["kind"] == "not_granted"
    # beyond any epoch file's integer (2^63 - 1): not granted either, audited, not a 503
    for n, token in enumerate((2**63, 2**64 - 1), start=2):
        with pytest.raises(ClientError) as e:
            boto3_with_token(gw, token).put_object(Bucket=bucket, Key="orders/f", Body=b"huge")
        assert e.value.response["Error"]["Code"] == "FencingTokenNotGranted", token
        recs = wait_audit(gw, n, lock=LOCK)
        assert (recs[-1]["kind"], recs[-1]["token"]) == ("not_granted", token)
    assert rgw_body(rgw, bucket, "orders/f") == b"real again"


def test_bad_claims_refused_nothing_stored(fgw, rgw, bucket):
    gw = fgw
    grant(gw, 1)
    url = f"{gw.url}/{bucket}/orders/bad"
    cases = [
        ({}, 428, "MissingFencingToken"),
        ({"X-Fencing-Token": "1", "X-Fencing-Lock": "payments"}, 400, "FencingLockMismatch"),
        ({"X-Fencing-Token": "one"}, 400, "InvalidFencingToken"),
        ({"X-Fencing-Token": "-1"}, 400, "InvalidFencingToken"),
        ({"X-Fencing-Token": "0"}, 400, "InvalidFencingToken"),
        ({"X-Fencing-Token": "1", "x-amz-meta-fencing-token": "2"}, 400, "InvalidFencingToken"),
        ({"X-Fencing-Token": "1", "X-Fencing-Lock": "bad lock!"}, 400, "InvalidFencingToken"),
    ]
    for headers, status, code in cases:
        r = requests.put(url, data=b"x", headers=headers, timeout=10)
        assert (r.status_code, code_of(r)) == (status, code), (headers, r.text)
    assert rgw_body(rgw, bucket, "orders/bad") is None
    kinds = [r["kind"] for r in wait_audit(gw, len(cases))]
    assert kinds.count("missing_token") == 1 and kinds.count("lock_mismatch") == 1
    # outside the rule, a token needs a lock; without one the write passes (default)
    r = requests.put(f"{gw.url}/{bucket}/free/x", data=b"x", timeout=10)
    assert r.status_code == 200
    r = requests.put(f"{gw.url}/{bucket}/free/y", data=b"x", headers={"X-Fencing-Token": "1"},
                     timeout=10)
    assert (r.status_code, code_of(r)) == (400, "InvalidFencingToken")
    # reads are never fenced
    assert requests.get(f"{gw.url}/{bucket}/free/x", timeout=10).status_code == 200


def test_kill9_after_advance_keeps_fence(fgw, rgw, bucket):
    gw = fgw
    grant(gw, 7)
    boto3_with_token(gw, 7).put_object(Bucket=bucket, Key="orders/k", Body=b"seven")
    gw.kill9()
    gw.restart()
    with pytest.raises(ClientError) as e:
        boto3_with_token(gw, 6).put_object(Bucket=bucket, Key="orders/k", Body=b"six")
    assert e.value.response["Error"]["Code"] == "StaleFencingToken"
    assert rgw_body(rgw, bucket, "orders/k") == b"seven"


def test_barrier_cuts_unsent_older_write(fgw, rgw, bucket):
    """An epoch-1 upload still sending when epoch 2 writes is cut before its last
    byte: its client gets 409, nothing of it lands at RGW."""
    gw = fgw
    grant(gw, 1)
    size = 4 * 1024 * 1024
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
    s.sendall((f"PUT /{bucket}/orders/slow HTTP/1.1\r\nHost: {gw.host}\r\n"
               f"X-Fencing-Token: 1\r\nContent-Length: {size}\r\n\r\n").encode())
    s.sendall(b"1" * (size // 2))  # half the body: admitted and streaming
    time.sleep(0.5)
    grant(gw, 2)
    boto3_with_token(gw, 2).put_object(Bucket=bucket, Key="orders/fast", Body=b"epoch 2")
    try:
        s.sendall(b"1" * (size // 2))
    except OSError:
        pass  # the gateway may already have closed the connection
    resp = recv_answer(s)
    s.close()
    assert resp.startswith(b"HTTP/1.1 409"), resp[:300]
    assert b"StaleFencingToken" in resp
    time.sleep(0.5)
    assert rgw_body(rgw, bucket, "orders/slow") is None
    assert rgw_body(rgw, bucket, "orders/fast") == b"epoch 2"
    kinds = [r["kind"] for r in wait_audit(gw, 1, lock=LOCK)]
    assert "cut" in kinds


def test_epoch_metadata_cannot_be_forged(fgw, rgw, bucket):
    gw = fgw
    grant(gw, 1)
    c = boto3_with_token(gw, 1)
    c.put_object(Bucket=bucket, Key="orders/meta", Body=b"x", Metadata={"fencing-epoch": "999"})
    head = rgw.client().head_object(Bucket=bucket, Key="orders/meta")
    assert head["Metadata"]["fencing-epoch"] == "1"


def test_bucket_writes_refused_unless_configured(fgw, rgw):
    r = requests.put(f"{fgw.url}/fg-new-bucket-via-gateway", timeout=10)
    assert r.status_code == 403 and code_of(r) == "AccessDenied"


def test_barrier_awaits_completely_sent_older_write(gateway, rgw, bucket):
    """An epoch-1 write completely sent but delayed upstream finishes before the
    epoch-2 write is forwarded; the order at RGW proves it (the last writer wins
    at S3, and it must be epoch 2)."""
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    try:
        gw = gateway({"upstream": {"endpoint": f"http://127.0.0.1:{relay.port}"},
                      "fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                                  "require_token": True}]})
        grant(gw, 1)
        slow = {}

        def epoch1():
            t0 = time.monotonic()
            slow["r"] = requests.put(f"{gw.url}/{bucket}/orders/race", data=b"epoch 1",
                                     headers={"X-Fencing-Token": "1",
                                              "x-test-delay-ms": "2000"}, timeout=30)
            slow["t"] = time.monotonic() - t0

        th = threading.Thread(target=epoch1)
        th.start()
        for _ in range(100):  # wait until the relay holds the complete epoch-1 request
            if relay.log:
                break
            time.sleep(0.02)
        assert relay.log and relay.log[0][0] == "held"
        grant(gw, 2)
        t0 = time.monotonic()
        r2 = requests.put(f"{gw.url}/{bucket}/orders/race", data=b"epoch 2",
                          headers={"X-Fencing-Token": "2"}, timeout=30)
        waited = time.monotonic() - t0
        th.join(30)
        assert slow["r"].status_code == 200, slow["r"].text  # sent completely: not cut
        assert r2.status_code == 200, r2.text
        assert waited > 1.0, waited  # epoch 2 waited for the epoch-1 write to finish
        events = [e for e, _ in relay.log]
        assert events.index("forwarded-delayed") < events.index("forwarded-put"), events
        assert rgw_body(rgw, bucket, "orders/race") == b"epoch 2"
    finally:
        relay.close()


def relay_gateway(gateway, rgw, bucket):
    """A fenced gateway whose upstream is a DelayRelay in front of RGW."""
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    gw = gateway({"upstream": {"endpoint": f"http://127.0.0.1:{relay.port}"},
                  "fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                              "require_token": True}]})
    return relay, gw


def wait_relay(relay, event, timeout=10.0):
    """Wait until the relay logged event (e.g. "held": it has the complete request)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(e == event for e, _ in relay.log):
            return True
        time.sleep(0.02)
    return False


def held_older_write_then_newer(gw, relay, send_old, newer_key, newer_body):
    """Run send_old (an epoch-1 write the relay holds for 2 s) in a thread;
    once the relay holds it, grant epoch 2 and PUT newer_body to newer_key.
    Returns (old response, newer response, seconds the newer one took)."""
    out = {}
    th = threading.Thread(target=lambda: out.update(r=send_old()))
    th.start()
    assert wait_relay(relay, "held"), relay.log
    grant(gw, 2)
    t0 = time.monotonic()
    r2 = requests.put(f"{gw.url}/{newer_key}", data=newer_body,
                      headers={"X-Fencing-Token": "2"}, timeout=30)
    waited = time.monotonic() - t0
    th.join(30)
    return out.get("r"), r2, waited


def test_barrier_awaits_zero_length_older_write(gateway, rgw, bucket):
    """G3: a fenced PUT with Content-Length: 0 (an empty object, a _SUCCESS
    marker) is completely sent with its head.  Held upstream while epoch 2
    writes, it is awaited, not cut: its client gets RGW's 200, and the epoch-2
    write lands after it."""
    relay, gw = relay_gateway(gateway, rgw, bucket)
    try:
        grant(gw, 1)
        old, r2, waited = held_older_write_then_newer(
            gw, relay,
            lambda: requests.put(f"{gw.url}/{bucket}/orders/_SUCCESS", data=b"",
                                 headers={"X-Fencing-Token": "1", "x-test-delay-ms": "2000"},
                                 timeout=30),
            f"{bucket}/orders/_SUCCESS", b"epoch 2")
        assert old is not None and old.status_code == 200, getattr(old, "text", None)
        assert r2.status_code == 200, r2.text
        assert waited > 1.0, waited  # epoch 2 waited for the empty epoch-1 write
        events = [e for e, _ in relay.log]
        assert events.index("forwarded-delayed") < events.index("forwarded-put"), events
        time.sleep(0.3)
        assert rgw_body(rgw, bucket, "orders/_SUCCESS") == b"epoch 2"
    finally:
        relay.close()


def test_barrier_awaits_create_multipart_upload(gateway, rgw, bucket):
    """CreateMultipartUpload has no body: it is awaited like any completely
    sent write: its client gets the UploadId, and the upload is recorded under
    epoch 1, so the advance to epoch 2 reaps it rather than leaving it at RGW
    untracked."""
    relay, gw = relay_gateway(gateway, rgw, bucket)
    try:
        grant(gw, 1)
        old, r2, waited = held_older_write_then_newer(
            gw, relay,
            lambda: requests.post(f"{gw.url}/{bucket}/orders/mp?uploads",
                                  headers={"X-Fencing-Token": "1", "x-test-delay-ms": "2000"},
                                  timeout=30),
            f"{bucket}/orders/other", b"epoch 2")
        assert old is not None and old.status_code == 200, getattr(old, "text", None)
        assert r2.status_code == 200, r2.text
        assert waited > 1.0, waited
        upload_id = old.text.split("<UploadId>", 1)[1].split("</UploadId>", 1)[0]
        # recorded under epoch 1, so the advance to epoch 2 reaps it: no orphan
        assert wait_uploads_gone(rgw, bucket, "orders/mp"), upload_id
        assert "aborted upload" in gw.log()
    finally:
        relay.close()


def wait_uploads_gone(rgw, bucket, key, timeout=5.0):
    """True once RGW lists no multipart upload of key (the gateway aborted it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = rgw.client().list_multipart_uploads(Bucket=bucket)
        if not [u for u in r.get("Uploads", []) if u["Key"] == key]:
            return True
        time.sleep(0.1)
    return False


def put_then_reset(gw, relay, target, body, token=1, method="PUT"):
    """Send a whole fenced request the relay holds for 2 s over a raw socket,
    wait until the relay has all of it (so the gateway handed its last byte
    upstream), then reset the connection (SO_LINGER 0: RST, no FIN)."""
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
    s.sendall((f"{method} /{target} HTTP/1.1\r\nHost: {gw.host}\r\n"
               f"X-Fencing-Token: {token}\r\nx-test-delay-ms: 2000\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
    assert wait_relay(relay, "held"), relay.log
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    deadline = time.monotonic() + 5
    while "client request aborted" not in gw.log() and time.monotonic() < deadline:
        time.sleep(0.02)  # the gateway must have seen the reset before epoch 2 writes
    assert "client request aborted" in gw.log()


def test_barrier_awaits_sent_write_whose_client_reset(gateway, rgw, bucket):
    """G3: a client that resets its connection after its last byte went
    upstream does not open the barrier: the epoch-2 write waits for the
    upstream outcome of the epoch-1 write, and no stale write lands after it."""
    relay, gw = relay_gateway(gateway, rgw, bucket)
    try:
        grant(gw, 1)
        put_then_reset(gw, relay, f"{bucket}/orders/rst", b"epoch 1 zombie")
        grant(gw, 2)
        t0 = time.monotonic()
        r2 = requests.put(f"{gw.url}/{bucket}/orders/rst", data=b"epoch 2",
                          headers={"X-Fencing-Token": "2"}, timeout=30)
        waited = time.monotonic() - t0
        assert r2.status_code == 200, r2.text
        # let a stale write the relay still holds land, if the barrier let it
        assert wait_relay(relay, "forwarded-delayed"), relay.log
        time.sleep(0.5)
        assert rgw_body(rgw, bucket, "orders/rst") == b"epoch 2"  # the stale write did not win
        events = [e for e, _ in relay.log]
        assert events.index("forwarded-delayed") < events.index("forwarded-put"), events
        assert waited > 1.0, waited
    finally:
        relay.close()


def test_reset_create_multipart_upload_still_recorded(gateway, rgw, bucket):
    """A CreateMultipartUpload whose client reset after sending it still holds
    the barrier until RGW answered, and its upload id is recorded under its
    epoch from the answer nobody reads, so the gateway reaps it (no orphan)."""
    relay, gw = relay_gateway(gateway, rgw, bucket)
    try:
        grant(gw, 1)
        put_then_reset(gw, relay, f"{bucket}/orders/mp-rst?uploads", b"", method="POST")
        grant(gw, 2)
        t0 = time.monotonic()
        r2 = requests.put(f"{gw.url}/{bucket}/orders/next", data=b"epoch 2",
                          headers={"X-Fencing-Token": "2"}, timeout=30)
        waited = time.monotonic() - t0
        assert r2.status_code == 200, r2.text
        assert wait_relay(relay, "forwarded-delayed"), relay.log
        time.sleep(0.5)
        assert waited > 1.0, waited
        # the answer nobody read was recorded under epoch 1, so the advance to
        # epoch 2 reaps the upload; untracked, it would stay at RGW for ever
        assert wait_uploads_gone(rgw, bucket, "orders/mp-rst")
        assert "aborted upload" in gw.log()
    finally:
        relay.close()
