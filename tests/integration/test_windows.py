"""Write windows (README "Write windows"): the fence holds across a kill -9 with
a write's tail still on the wire, across two gateways sharing an s3
election, for a zombie whose lease ran out while nobody wrote, and for a
gateway paused (SIGSTOP) with a body half sent.  Each test is one of the
failures measured on the version without windows, against the real RGW."""
import json
import os
import signal
import socket
import threading
import time

import pytest
import requests

from relay import DelayRelay

LOCK = "orders"
# s3: a read's window loses up to 2 s to whole-second HTTP dates, so leases
# under 3150 ms are refused with a 100 ms commit margin (check-config).
S3_LEASE = 3500


def api(gw, path, body=None, timeout=30):
    url = f"{gw.url}/_fencegate/v1/locks/{path}"
    if body is None:
        return requests.get(url, timeout=timeout)
    return requests.post(url, json=body, timeout=timeout)


def acquire(gw, holder, lease_ms, wait_ms=0):
    r = api(gw, f"{LOCK}/acquire", {"holder": holder, "lease_ms": lease_ms, "wait_ms": wait_ms},
            timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def put(gw, bucket, key, body, token, extra=None, timeout=30):
    headers = {"X-Fencing-Token": str(token), "X-Fencing-Lock": LOCK}
    headers.update(extra or {})
    return requests.put(f"{gw.url}/{bucket}/{key}", data=body, headers=headers, timeout=timeout)


def code_of(r):
    t = r.text
    return t.split("<Code>")[1].split("</Code>")[0] if "<Code>" in t else t


def body_at_rgw(rgw, bucket, key):
    return rgw.client().get_object(Bucket=bucket, Key=key)["Body"].read()


def audit_kinds(gw, expect=1, timeout=10):
    """The lock's audit records as (kind, token); records are committed in the
    background (group commit), so wait until `expect` of them are there."""
    deadline = time.monotonic() + timeout
    while True:
        recs = requests.get(f"{gw.url}/_fencegate/v1/audit", params={"lock": LOCK},
                            timeout=10).json()["records"]
        if len(recs) >= expect or time.monotonic() > deadline:
            return [(r["kind"], r["token"]) for r in recs]
        time.sleep(0.05)


def wait_ready(gw, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        r = requests.get(f"{gw.url}/readyz", timeout=5)
        if r.status_code == 200:
            return
        assert time.monotonic() < deadline, r.text
        time.sleep(0.05)


def fence_rule(bucket):
    return [{"bucket": bucket, "prefix": "orders/", "lock": LOCK, "require_token": True}]


def dir_gateway(gateway, tmp_path, bucket, extra=None, gateway_id="gw-a"):
    cfg = {"gateway_id": gateway_id,
           "election": {"backend": "dir", "path": str(tmp_path / "locks"), "min_lease_ms": 200},
           "fences": fence_rule(bucket)}
    cfg.update(extra or {})
    gw = gateway(cfg)
    wait_ready(gw)
    return gw


def s3_gateways(gateway, bucket, locks_bucket, n, extra=None):
    gws = []
    for i in range(n):
        cfg = {"gateway_id": f"gw-{i}",
               "election": {"backend": "s3", "bucket": locks_bucket, "prefix": "fencegate/",
                            "min_lease_ms": 3150, "default_lease_ms": S3_LEASE,
                            "shared_window_ms": 1000},
               "fences": fence_rule(bucket)}
        for k, v in (extra or {}).items():
            cfg[k] = v
        gws.append(gateway(cfg))
    for gw in gws:
        wait_ready(gw)
    return gws


def test_two_gateway_zombie_refused(gateway, rgw, bucket, locks_bucket):
    """Item 4: w1 gets token 1 and writes via B; its lease runs out; w2 gets token 2
    via A and writes via A; w1 writes again with token 1 via B: refused, and the
    object holds w2's bytes.  (Without windows: 200, the zombie's bytes.)"""
    a, b = s3_gateways(gateway, bucket, locks_bucket, 2)
    w1 = acquire(a, "w1", S3_LEASE)
    r = put(b, bucket, "orders/x", b"w1 first", w1["token"])
    assert r.status_code == 200, r.text
    w2 = acquire(a, "w2", S3_LEASE, wait_ms=20000)  # w1 stops renewing
    assert w2["token"] == w1["token"] + 1
    r = put(a, bucket, "orders/x", b"w2", w2["token"])
    assert r.status_code == 200, r.text
    r = put(b, bucket, "orders/x", b"w1 zombie", w1["token"])
    assert r.status_code == 409, r.text
    assert code_of(r) in ("FencingLeaseExpired", "StaleFencingToken"), r.text
    assert body_at_rgw(rgw, bucket, "orders/x") == b"w2"
    assert len(audit_kinds(b)) == 1
    # The takeover rewrote epoch 1 expired:true before epoch 2 existed.
    key = f"fencegate/{LOCK}/epoch-{w1['token']:020d}.json"
    rec = json.loads(rgw.client().get_object(Bucket=locks_bucket, Key=key)["Body"].read())
    assert rec["expired"] is True


def test_granting_gateway_refuses_older_token_at_once(gateway, rgw, bucket, locks_bucket):
    """Item 4: the gateway that granted epoch e+1 refuses a token-e write at
    once, though no e+1 write has reached it (the fence learns the grant)."""
    (a,) = s3_gateways(gateway, bucket, locks_bucket, 1)
    w1 = acquire(a, "w1", S3_LEASE)
    assert put(a, bucket, "orders/y", b"w1", w1["token"]).status_code == 200
    w2 = acquire(a, "w2", S3_LEASE, wait_ms=20000)
    r = put(a, bucket, "orders/y", b"w1 again", w1["token"])
    assert r.status_code == 409 and code_of(r) == "StaleFencingToken", r.text
    fences = requests.get(f"{a.url}/_fencegate/v1/fences", timeout=10).json()
    assert json.dumps(fences).count(str(w2["token"])) >= 1, fences
    assert body_at_rgw(rgw, bucket, "orders/y") == b"w1"


def test_zombie_after_lease_ran_out_refused(gateway, rgw, bucket, tmp_path):
    """Item 5: a holder that stopped renewing writes after its lease ran out and
    before anyone else acquired: 409 FencingLeaseExpired, audited, not stored."""
    gw = dir_gateway(gateway, tmp_path, bucket)
    w1 = acquire(gw, "w1", 1000)
    assert put(gw, bucket, "orders/z", b"live", w1["token"]).status_code == 200
    time.sleep(1.3)
    r = put(gw, bucket, "orders/z", b"zombie", w1["token"])
    assert r.status_code == 409 and code_of(r) == "FencingLeaseExpired", r.text
    assert body_at_rgw(rgw, bucket, "orders/z") == b"live"
    assert audit_kinds(gw) == [("lease_expired", w1["token"])]


def test_renewing_holder_keeps_writing(gateway, rgw, bucket, locks_bucket):
    """The other side of item 5: a holder renewing at a third of its lease writes
    through a gateway that only reads its epoch file, for several leases."""
    a, b = s3_gateways(gateway, bucket, locks_bucket, 2)
    w1 = acquire(a, "w1", S3_LEASE)
    t_end = time.monotonic() + 2.5 * S3_LEASE / 1000
    n = 0
    next_renew = time.monotonic() + S3_LEASE / 3000
    while time.monotonic() < t_end:
        if time.monotonic() >= next_renew:
            r = api(a, f"{LOCK}/renew", {"token": w1["token"], "lease_id": w1["lease_id"]})
            assert r.status_code == 200, r.text
            next_renew = time.monotonic() + S3_LEASE / 3000
        r = put(b, bucket, "orders/r", f"w1 {n}".encode(), w1["token"])
        assert r.status_code == 200, (n, r.text)
        n += 1
        time.sleep(0.1)
    assert n > 10
    reads = [ln for ln in requests.get(f"{b.url}/metrics", timeout=10).text.splitlines()
             if ln.startswith("fencegate_write_window_reads_total ")]
    assert reads, "no write_window_reads_total metric"
    # one read per shared window (1 s) or so, never one per write
    assert int(reads[0].split()[1]) <= n // 2, (reads, n)


def test_kill9_with_tail_on_the_wire(gateway, rgw, bucket, tmp_path):
    """Item 1: the gateway completely sent an epoch-1 write that the network holds
    (the relay delays it, within the commit margin) and is killed; restarted, it
    must not forward epoch-2 writes before the old one can have committed: the
    last writer at RGW is epoch 2."""
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    try:
        gw = dir_gateway(gateway, tmp_path, bucket, {
            "upstream": {"endpoint": f"http://127.0.0.1:{relay.port}"},
            "fencing": {"commit_margin_ms": 1500, "complete_margin_ms": 1500},
            "election": {"backend": "dir", "path": str(tmp_path / "locks"),
                         "min_lease_ms": 2250, "default_lease_ms": 10000}})
        w1 = acquire(gw, "w1", 10000)
        out = {}

        def epoch1():
            try:
                out["r"] = put(gw, bucket, "orders/k", b"epoch 1", w1["token"],
                               {"x-test-delay-ms": "1000"})
            except requests.RequestException as e:  # the gateway dies under it
                out["e"] = e

        th = threading.Thread(target=epoch1)
        th.start()
        for _ in range(200):  # the relay holds the complete epoch-1 request
            if relay.log:
                break
            time.sleep(0.01)
        assert relay.log and relay.log[0][0] == "held"
        gw.kill9()
        gw.restart(wait=True)
        wait_ready(gw)
        r = api(gw, f"{LOCK}/release", {"token": w1["token"], "lease_id": w1["lease_id"]})
        assert r.status_code == 200, r.text
        w2 = acquire(gw, "w2", 10000)
        r = put(gw, bucket, "orders/k", b"epoch 2", w2["token"])
        assert r.status_code == 200, r.text
        th.join(30)
        events = [e for e, _ in relay.log]
        assert events.index("forwarded-delayed") < events.index("forwarded-put"), events
        assert body_at_rgw(rgw, bucket, "orders/k") == b"epoch 2"
    finally:
        relay.close()


def _send_head(gw, bucket, key, token, length):
    s = socket.create_connection((gw.host.split(":")[0], gw.port), timeout=30)
    s.sendall((f"PUT /{bucket}/{key} HTTP/1.1\r\nHost: {gw.host}\r\n"
               f"Content-Length: {length}\r\nX-Fencing-Token: {token}\r\n"
               f"X-Fencing-Lock: {LOCK}\r\n\r\n").encode())
    return s


def _read_response(s):
    s.settimeout(30)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head else 0
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, rest.decode(errors="replace")


def test_granting_gateway_cuts_its_own_unsent_older_upload(gateway, rgw, bucket, locks_bucket):
    """Item 4: a gateway that grants epoch e+1 cuts its own in-flight token-e
    upload that has not sent its last byte: 409, audited as cut, nothing stored."""
    (a,) = s3_gateways(gateway, bucket, locks_bucket, 1)
    w1 = acquire(a, "w1", S3_LEASE)
    s = _send_head(a, bucket, "orders/u", w1["token"], 10)
    try:
        s.sendall(b"half ")
        acquire(a, "w2", S3_LEASE, wait_ms=20000)
        status, text = _read_response(s)
        assert status == 409 and "StaleFencingToken" in text, (status, text)
    finally:
        s.close()
    kinds = [k for k, _ in audit_kinds(a)]
    assert kinds == ["cut"], kinds
    with pytest.raises(Exception):
        body_at_rgw(rgw, bucket, "orders/u")


def test_paused_gateway_cuts_half_sent_body(gateway, rgw, bucket, locks_bucket):
    """A gateway SIGSTOPped with a body half sent wakes after its window closed
    and a newer epoch was granted elsewhere: its write is cut before the last
    byte; the object holds the newer leader's bytes."""
    a, b = s3_gateways(gateway, bucket, locks_bucket, 2)
    w1 = acquire(a, "w1", S3_LEASE)
    s = _send_head(a, bucket, "orders/p", w1["token"], 12)
    try:
        s.sendall(b"old ")
        time.sleep(0.3)  # admitted and forwarding
        os.kill(a.pid, signal.SIGSTOP)
        try:
            w2 = acquire(b, "w2", S3_LEASE, wait_ms=30000)
            assert put(b, bucket, "orders/p", b"new leader", w2["token"]).status_code == 200
            s.sendall(b"leader!!")  # the rest of the body waits in the socket
        finally:
            os.kill(a.pid, signal.SIGCONT)
        status, text = _read_response(s)
        assert status == 409, (status, text)
        assert "FencingLeaseExpired" in text or "StaleFencingToken" in text, text
    finally:
        s.close()
    assert body_at_rgw(rgw, bucket, "orders/p") == b"new leader"


def test_non_shared_gateway_refuses_foreign_epochs(gateway, rgw, bucket, tmp_path):
    """A gateway told it is the only one (election.shared false) that meets an
    epoch another gateway granted refuses that lock's writes with 503."""
    a = dir_gateway(gateway, tmp_path, bucket, gateway_id="gw-a")
    b = dir_gateway(gateway, tmp_path, bucket, gateway_id="gw-b")
    w1 = acquire(a, "w1", 5000)
    assert put(a, bucket, "orders/f", b"via a", w1["token"]).status_code == 200
    r = put(b, bucket, "orders/f", b"via b", w1["token"])
    assert r.status_code == 503, r.text
    assert "election.shared" in r.text
    assert "granted by another gateway" in b.log()
    assert body_at_rgw(rgw, bucket, "orders/f") == b"via a"


def test_renew_after_lease_ran_out_refused(gateway, bucket, tmp_path):
    """DESIGN rule 3: a renewal is written only inside the window; a holder that
    comes back after its lease ran out cannot revive it."""
    gw = dir_gateway(gateway, tmp_path, bucket)
    w1 = acquire(gw, "w1", 1000)
    time.sleep(1.2)
    r = api(gw, f"{LOCK}/renew", {"token": w1["token"], "lease_id": w1["lease_id"]})
    assert r.status_code == 409, r.text
