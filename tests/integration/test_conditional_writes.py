"""Conditional writes (README "Conditional writes", DESIGN "Conditional
writes"): fenced overwrites go to the store with If-Match / If-None-Match on
the version the gateway knows, so a late stale write fails at the store
itself.  Against the real RGW 16, which honours them on PutObject only.

The hole tests are deterministic: a relay of the test's own between gateway
1 and RGW holds A's complete request well past A's lease while B takes the
next epoch and writes; with conditional writes off (the control) A's stale
version lands after B's, with them on the store refuses it."""
import json
import os
import signal
import threading
import time

import botocore
import pytest
import requests

from relay import DelayRelay, split_request
from test_windows import (  # noqa: F401 (shared helpers)
    acquire, api, audit_kinds as audit, body_at_rgw, code_of, put, wait_ready)

LOCK = "orders"
S3_LEASE = 3500


def etag_at_rgw(rgw, bucket, key):
    return rgw.client().head_object(Bucket=bucket, Key=key)["ETag"].strip('"')


def metric(gw, name):
    for ln in requests.get(f"{gw.url}/metrics", timeout=10).text.splitlines():
        if ln.startswith(f"fencegate_{name} "):
            return int(ln.split()[1])
    raise AssertionError(f"no metric {name}")


def wait_cond(gw, on=True, timeout=30):
    """Until the start-up probe has answered (the gauge says on)."""
    deadline = time.monotonic() + timeout
    while metric(gw, "conditional_writes") != (1 if on else 0):
        assert time.monotonic() < deadline, gw.log(tail=40)
        time.sleep(0.05)


def wait_log(gw, text, timeout=30):
    """Until gw's log says text (the off verdict leaves the gauge where it began)."""
    deadline = time.monotonic() + timeout
    while text not in gw.log():
        assert time.monotonic() < deadline, gw.log(tail=40)
        time.sleep(0.05)


def fence_rule(bucket, **kw):
    rule = {"bucket": bucket, "prefix": "orders/", "lock": LOCK, "require_token": True}
    rule.update(kw)
    return [rule]


def upstream_puts(relay, key):
    """(headers) of every PUT/DELETE/POST the gateway sent upstream for key."""
    out = []
    for raw in relay.requests:
        line, headers, _ = split_request(raw)
        if f"/{key} " in line or f"/{key}?" in line:
            out.append((line.split(" ")[0], headers))
    return out


@pytest.fixture
def relay(rgw):
    r = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    yield r
    r.close()


def dir_gateway(gateway, tmp_path, bucket, relay=None, fencing=None, rules=None, lease=10000,
                min_lease=200):
    cfg = {"election": {"backend": "dir", "path": str(tmp_path / "locks"), "min_lease_ms": min_lease,
                        "default_lease_ms": lease},
           "fences": rules or fence_rule(bucket)}
    if relay is not None:
        cfg["upstream"] = {"endpoint": f"http://127.0.0.1:{relay.port}"}
    if fencing:
        cfg["fencing"] = fencing
    gw = gateway(cfg)
    wait_ready(gw)
    return gw


def s3_gateway(gateway, bucket, locks_bucket, i, relay=None, cond="auto"):
    cfg = {"gateway_id": f"gw-{i}",
           "election": {"backend": "s3", "bucket": locks_bucket, "prefix": "fencegate/",
                        "min_lease_ms": 3150, "default_lease_ms": S3_LEASE,
                        "shared_window_ms": 1000},
           "fences": fence_rule(bucket),
           "fencing": {"conditional_writes": cond}}
    if relay is not None:
        cfg["upstream"] = {"endpoint": f"http://127.0.0.1:{relay.port}"}
    gw = gateway(cfg)
    wait_ready(gw)
    return gw


# ---- the probe and the decision ----

def test_probe_finds_rgw_honours_put_only(gateway, rgw, bucket, tmp_path):
    gw = dir_gateway(gateway, tmp_path, bucket)
    wait_cond(gw, True)
    log = gw.log()
    assert "conditional-write probe: PutObject honours conditions (If-Match bare)" in log, log
    assert ("CopyObject ignores them, CompleteMultipartUpload ignores them, "
            "DeleteObject ignores If-Match") in log, log
    assert "multipart step" not in log, log  # Complete was tried, and answered 2xx
    assert "conditional writes ON" in log, log
    # the probe leaves neither its object nor its upload behind
    c = rgw.client()
    deadline = time.monotonic() + 10
    while True:
        objs = [o["Key"] for o in c.list_objects_v2(Bucket=bucket).get("Contents", [])
                if "~probe/" in o["Key"]]
        ups = [u["Key"] for u in c.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]
        if not objs and not ups or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not objs and not ups, (objs, ups)


def test_off_adds_nothing(gateway, rgw, bucket, tmp_path, relay):
    gw = dir_gateway(gateway, tmp_path, bucket, relay, {"conditional_writes": "off"})
    assert "conditional writes OFF (fencing.conditional_writes: off)" in gw.log()
    w = acquire(gw, "w", 10000)
    assert put(gw, bucket, "orders/off", b"1", w["token"]).status_code == 200
    assert put(gw, bucket, "orders/off", b"2", w["token"]).status_code == 200
    for _, h in upstream_puts(relay, "orders/off"):
        assert "if-match" not in h and "if-none-match" not in h, h
    assert metric(gw, "conditional_write_heads_total") == 0


def test_rule_override_off(gateway, rgw, bucket, tmp_path, relay):
    gw = dir_gateway(gateway, tmp_path, bucket, relay,
                     rules=fence_rule(bucket, conditional_writes="off"))
    wait_cond(gw, True)
    w = acquire(gw, "w", 10000)
    assert put(gw, bucket, "orders/ro", b"1", w["token"]).status_code == 200
    for _, h in upstream_puts(relay, "orders/ro"):
        assert "if-match" not in h and "if-none-match" not in h, h


def test_on_starts_on_rgw(gateway, rgw, bucket, tmp_path):
    gw = dir_gateway(gateway, tmp_path, bucket, fencing={"conditional_writes": "on"})
    wait_cond(gw, True)
    w = acquire(gw, "w", 10000)
    assert put(gw, bucket, "orders/on", b"1", w["token"]).status_code == 200


def test_reload_from_off_starts_the_probe(gateway, rgw, bucket, tmp_path, relay):
    """Started with conditional writes off, reloaded with "on": the probe runs
    at the reload, and fenced overwrites carry conditions.  (It ran only at
    start: under "on" every fenced write was answered 503 until a restart.)"""
    gw = dir_gateway(gateway, tmp_path, bucket, relay, {"conditional_writes": "off"})
    w = acquire(gw, "w", 10000)
    gw.config["fencing"]["conditional_writes"] = "on"
    gw.config_path.write_text(json.dumps(gw.config, indent=2) + "\n")
    os.kill(gw.pid, signal.SIGHUP)
    wait_log(gw, "configuration reloaded")
    wait_cond(gw, True)
    assert put(gw, bucket, "orders/reload", b"1", w["token"]).status_code == 200
    assert put(gw, bucket, "orders/reload", b"2", w["token"]).status_code == 200
    hdrs = [h for m, h in upstream_puts(relay, "orders/reload") if m == "PUT"]
    assert len(hdrs) == 2 and "if-none-match" in hdrs[0] and "if-match" in hdrs[1], hdrs


# ---- where the condition comes from ----

def test_absent_key_miss_then_cached(gateway, rgw, bucket, tmp_path, relay):
    """An absent key: a HEAD (counted), then If-None-Match: *; the next write
    takes the ETag from the map: If-Match with RGW's bare form, no HEAD."""
    gw = dir_gateway(gateway, tmp_path, bucket, relay)
    wait_cond(gw, True)
    w = acquire(gw, "w", 10000)
    heads = metric(gw, "conditional_write_heads_total")
    r = put(gw, bucket, "orders/a", b"first", w["token"])
    assert r.status_code == 200, r.text
    assert metric(gw, "conditional_write_heads_total") == heads + 1
    sent = upstream_puts(relay, "orders/a")
    assert [m for m, _ in sent] == ["HEAD", "PUT"], sent
    assert sent[1][1].get("if-none-match") == "*", sent[1][1]
    e1 = etag_at_rgw(rgw, bucket, "orders/a")
    r = put(gw, bucket, "orders/a", b"second", w["token"])
    assert r.status_code == 200, r.text
    assert metric(gw, "conditional_write_heads_total") == heads + 1  # a cache hit
    sent = upstream_puts(relay, "orders/a")
    assert sent[-1][0] == "PUT" and sent[-1][1].get("if-match") == e1, sent[-1]
    assert body_at_rgw(rgw, bucket, "orders/a") == b"second"


def test_existing_key_miss_heads(gateway, rgw, bucket, tmp_path, relay):
    """A key written by someone else: the miss HEADs its ETag and conditions on it."""
    rgw.client().put_object(Bucket=bucket, Key="orders/m", Body=b"outside")
    e0 = etag_at_rgw(rgw, bucket, "orders/m")
    gw = dir_gateway(gateway, tmp_path, bucket, relay)
    wait_cond(gw, True)
    w = acquire(gw, "w", 10000)
    assert put(gw, bucket, "orders/m", b"mine", w["token"]).status_code == 200
    assert metric(gw, "conditional_write_heads_total") == 1
    sent = upstream_puts(relay, "orders/m")
    assert sent[-1][1].get("if-match") == e0, sent


def test_new_epoch_forgets(gateway, rgw, bucket, tmp_path, relay):
    """An epoch advance forgets the lock's ETags: the new holder's first write HEADs."""
    gw = dir_gateway(gateway, tmp_path, bucket, relay)
    wait_cond(gw, True)
    w1 = acquire(gw, "w1", 10000)
    assert put(gw, bucket, "orders/e", b"1", w1["token"]).status_code == 200
    assert put(gw, bucket, "orders/e", b"2", w1["token"]).status_code == 200
    assert metric(gw, "conditional_write_heads_total") == 1
    assert api(gw, f"{LOCK}/release", {"token": w1["token"],
                                        "lease_id": w1["lease_id"]}).status_code == 200
    w2 = acquire(gw, "w2", 10000)
    assert put(gw, bucket, "orders/e", b"3", w2["token"]).status_code == 200
    assert metric(gw, "conditional_write_heads_total") == 2


def test_client_condition_untouched(gateway, rgw, bucket, tmp_path, relay):
    """A client's own If-None-Match: nothing added, its 412 is its own."""
    gw = dir_gateway(gateway, tmp_path, bucket, relay)
    wait_cond(gw, True)
    w = acquire(gw, "w", 10000)
    assert put(gw, bucket, "orders/c", b"1", w["token"]).status_code == 200
    r = put(gw, bucket, "orders/c", b"2", w["token"], {"If-None-Match": "*"})
    assert r.status_code == 412 and code_of(r) == "PreconditionFailed", r.text
    sent = upstream_puts(relay, "orders/c")
    assert sent[-1][1].get("if-none-match") == "*" and "if-match" not in sent[-1][1], sent[-1]
    assert metric(gw, "conditional_write_slowdowns_total") == 0
    assert body_at_rgw(rgw, bucket, "orders/c") == b"1"
    # the client's If-Match with the right (bare) ETag passes, ours is not added
    e = etag_at_rgw(rgw, bucket, "orders/c")
    r = put(gw, bucket, "orders/c", b"3", w["token"], {"If-Match": e})
    assert r.status_code == 200, r.text
    assert upstream_puts(relay, "orders/c")[-1][1].get("if-match") == e


# ---- a stale map: another gateway wrote the key under the same epoch ----

def test_stale_cache_slow_down_then_retry(gateway, rgw, bucket, locks_bucket):
    a = s3_gateway(gateway, bucket, locks_bucket, 0)
    b = s3_gateway(gateway, bucket, locks_bucket, 1)
    wait_cond(a, True)
    wait_cond(b, True)
    w = acquire(a, "w", S3_LEASE)
    assert put(a, bucket, "orders/s", b"via a", w["token"]).status_code == 200
    assert put(b, bucket, "orders/s", b"via b", w["token"]).status_code == 200
    # a's map still holds the version before b's write: 412 at RGW, 503 here
    r = put(a, bucket, "orders/s", b"via a again", w["token"])
    assert r.status_code == 503 and code_of(r) == "SlowDown", r.text
    assert r.headers.get("Retry-After") == "1", r.headers
    assert metric(a, "conditional_write_slowdowns_total") == 1
    assert body_at_rgw(rgw, bucket, "orders/s") == b"via b"
    # the retry learns the new version (HEAD) and passes
    r = put(a, bucket, "orders/s", b"via a again", w["token"])
    assert r.status_code == 200, r.text
    assert body_at_rgw(rgw, bucket, "orders/s") == b"via a again"
    # the same with boto3's default retries: one call, success
    rgw.client().put_object(Bucket=bucket, Key="orders/s", Body=b"changed outside")
    c = botocore_client(a)
    c.put_object(Bucket=bucket, Key="orders/s", Body=b"boto3",
                 Metadata={"fencing-token": str(w["token"]), "fencing-lock": LOCK})
    assert body_at_rgw(rgw, bucket, "orders/s") == b"boto3"
    assert metric(a, "conditional_write_slowdowns_total") == 2
    assert audit(a, expect=0, timeout=0.5) == []


def botocore_client(gw):
    """boto3 through the gateway with boto3's default retry configuration."""
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=gw.url, aws_access_key_id=gw.rgw.access_key,
                        aws_secret_access_key=gw.rgw.secret_key, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}))


# ---- the hole: a late stale write after a newer epoch's ----

def _hole_two_gateways(gateway, rgw, bucket, locks_bucket, relay, cond, b_via_g1=False):
    g1 = s3_gateway(gateway, bucket, locks_bucket, 0, relay, cond)
    g2 = s3_gateway(gateway, bucket, locks_bucket, 1, None, cond)
    if cond != "off":
        wait_cond(g1, True)
        wait_cond(g2, True)
    a = acquire(g2, "A", S3_LEASE)
    out = {}

    def stale():
        out["r"] = put(g1, bucket, "orders/k", b"A stale", a["token"],
                       {"x-test-delay-ms": "9000"}, timeout=60)

    th = threading.Thread(target=stale)
    th.start()
    for _ in range(500):
        if relay.log:
            break
        time.sleep(0.01)
    assert relay.log and relay.log[0][0] == "held", relay.log
    b = acquire(g1 if b_via_g1 else g2, "B", S3_LEASE, wait_ms=20000)  # A's lease runs out
    assert b["token"] == a["token"] + 1
    r = put(g2, bucket, "orders/k", b"B", b["token"])
    assert r.status_code == 200, r.text
    assert "forwarded-delayed" not in [e for e, _ in relay.log], "A's write landed before B's"
    th.join(60)
    return g1, a, b, out["r"]


def test_hole_two_gateways_control_off(gateway, rgw, bucket, locks_bucket, relay):
    """The control: without conditions A's stale version lands after B's (the
    one assumption failing: the relay held a sent request past the margin)."""
    g1, a, b, r = _hole_two_gateways(gateway, rgw, bucket, locks_bucket, relay, "off")
    assert r.status_code == 200, r.text
    assert body_at_rgw(rgw, bucket, "orders/k") == b"A stale"


def test_hole_two_gateways_store_refuses(gateway, rgw, bucket, locks_bucket, relay):
    """With conditional writes on the store refuses A's late write: B's version
    stays, A gets 409, audited store_refused.  Gateway 1 never saw B's epoch:
    re-reading A's epoch file it finds A's lease ended (the takeover marked it
    expired), so the code is FencingLeaseExpired; StaleFencingToken when the
    gateway knows the newer epoch."""
    g1, a, b, r = _hole_two_gateways(gateway, rgw, bucket, locks_bucket, relay, "auto")
    assert r.status_code == 409, r.text
    assert code_of(r) in ("FencingLeaseExpired", "StaleFencingToken"), r.text
    assert body_at_rgw(rgw, bucket, "orders/k") == b"B"
    assert audit(g1) == [("store_refused", a["token"])]
    assert metric(g1, "conditional_write_store_refused_total") == 1


def test_hole_two_gateways_known_epoch(gateway, rgw, bucket, locks_bucket, relay):
    """B's epoch granted through gateway 1 (which holds A's sent write: the
    barrier awaits it, nothing cuts it), B writes through gateway 2: the store
    refuses A's late write and gateway 1, knowing B's epoch, answers exactly
    StaleFencingToken, audited store_refused."""
    g1, a, b, r = _hole_two_gateways(gateway, rgw, bucket, locks_bucket, relay, "auto",
                                     b_via_g1=True)
    assert r.status_code == 409 and code_of(r) == "StaleFencingToken", r.text
    assert body_at_rgw(rgw, bucket, "orders/k") == b"B"
    assert audit(g1) == [("store_refused", a["token"])]


def _hole_kill9(gateway, rgw, bucket, tmp_path, relay, cond):
    gw = dir_gateway(gateway, tmp_path, bucket, relay,
                     {"conditional_writes": cond, "commit_margin_ms": 1000,
                      "complete_margin_ms": 1000}, lease=10000, min_lease=2250)
    if cond != "off":
        wait_cond(gw, True)
    a = acquire(gw, "A", 10000)
    out = {}

    def stale():
        try:
            out["r"] = put(gw, bucket, "orders/k9", b"A stale", a["token"],
                           {"x-test-delay-ms": "7000"}, timeout=60)
        except requests.RequestException as e:  # the gateway dies under it
            out["e"] = e

    th = threading.Thread(target=stale)
    th.start()
    for _ in range(500):
        if relay.log:
            break
        time.sleep(0.01)
    assert relay.log and relay.log[0][0] == "held", relay.log
    gw.kill9()
    gw.restart(wait=True)
    wait_ready(gw)
    if cond != "off":
        wait_cond(gw, True)
    r = api(gw, f"{LOCK}/release", {"token": a["token"], "lease_id": a["lease_id"]})
    assert r.status_code == 200, r.text
    b = acquire(gw, "B", 10000)
    deadline = time.monotonic() + 10
    while True:  # past the restart's gate (commit_margin_ms)
        r = put(gw, bucket, "orders/k9", b"B", b["token"])
        if r.status_code != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert r.status_code == 200, r.text
    assert relay.log[-1][0] != "forwarded-delayed", "A's write reached the store before B's"
    th.join(60)
    deadline = time.monotonic() + 20  # the relay delivers A's request (its client is gone)
    while "forwarded-delayed" not in [e for e, _ in relay.log]:
        assert time.monotonic() < deadline, relay.log
        time.sleep(0.05)
    time.sleep(0.5)  # RGW answers it


def test_hole_kill9_control_off(gateway, rgw, bucket, tmp_path, relay):
    _hole_kill9(gateway, rgw, bucket, tmp_path, relay, "off")
    assert body_at_rgw(rgw, bucket, "orders/k9") == b"A stale"


def test_hole_kill9_store_refuses(gateway, rgw, bucket, tmp_path, relay):
    _hole_kill9(gateway, rgw, bucket, tmp_path, relay, "auto")
    assert body_at_rgw(rgw, bucket, "orders/k9") == b"B"


# ---- the other operations on RGW 16: no condition, the map forgets ----

def test_copy_object_unconditioned(gateway, rgw, bucket, tmp_path, relay):
    gw = dir_gateway(gateway, tmp_path, bucket, relay)
    wait_cond(gw, True)
    w = acquire(gw, "w", 10000)
    rgw.client().put_object(Bucket=bucket, Key="src", Body=b"source")
    assert put(gw, bucket, "orders/cp", b"1", w["token"]).status_code == 200
    r = put(gw, bucket, "orders/cp", b"", w["token"], {"x-amz-copy-source": f"/{bucket}/src"})
    assert r.status_code == 200, r.text
    sent = upstream_puts(relay, "orders/cp")
    assert "if-match" not in sent[-1][1] and "if-none-match" not in sent[-1][1], sent[-1]
    assert body_at_rgw(rgw, bucket, "orders/cp") == b"source"
    heads = metric(gw, "conditional_write_heads_total")
    assert put(gw, bucket, "orders/cp", b"2", w["token"]).status_code == 200
    assert metric(gw, "conditional_write_heads_total") == heads + 1  # forgotten after the copy: HEAD again


def test_complete_multipart_unconditioned(gateway, rgw, bucket, tmp_path, relay):
    gw = dir_gateway(gateway, tmp_path, bucket, relay)
    wait_cond(gw, True)
    w = acquire(gw, "w", 10000)
    assert put(gw, bucket, "orders/mp", b"1", w["token"]).status_code == 200
    c = gw.client()
    meta = {"fencing-token": str(w["token"]), "fencing-lock": LOCK}
    u = c.create_multipart_upload(Bucket=bucket, Key="orders/mp", Metadata=meta)["UploadId"]
    p = c.upload_part(Bucket=bucket, Key="orders/mp", UploadId=u, PartNumber=1, Body=b"mp")
    c.complete_multipart_upload(Bucket=bucket, Key="orders/mp", UploadId=u,
                                MultipartUpload={"Parts": [{"PartNumber": 1,
                                                            "ETag": p["ETag"]}]})
    assert body_at_rgw(rgw, bucket, "orders/mp") == b"mp"
    posts = [h for m, h in upstream_puts(relay, "orders/mp") if m == "POST"]
    assert posts and all("if-match" not in h and "if-none-match" not in h for h in posts), posts
    heads = metric(gw, "conditional_write_heads_total")
    assert put(gw, bucket, "orders/mp", b"2", w["token"]).status_code == 200
    assert metric(gw, "conditional_write_heads_total") == heads + 1


def test_delete_object_unconditioned(gateway, rgw, bucket, tmp_path, relay):
    """RGW 16 ignores If-Match on DELETE (the probe says so): none is sent, and
    the next write of the key learns it is gone."""
    gw = dir_gateway(gateway, tmp_path, bucket, relay)
    wait_cond(gw, True)
    w = acquire(gw, "w", 10000)
    assert put(gw, bucket, "orders/d", b"1", w["token"]).status_code == 200
    r = requests.delete(f"{gw.url}/{bucket}/orders/d", timeout=30,
                        headers={"X-Fencing-Token": str(w["token"]), "X-Fencing-Lock": LOCK})
    assert r.status_code == 204, r.text
    dels = [h for m, h in upstream_puts(relay, "orders/d") if m == "DELETE"]
    assert dels and "if-match" not in dels[-1], dels
    assert put(gw, bucket, "orders/d", b"2", w["token"]).status_code == 200
    sent = upstream_puts(relay, "orders/d")
    assert sent[-1][1].get("if-none-match") == "*", sent[-1]
    with pytest.raises(botocore.exceptions.ClientError):
        rgw.client().head_object(Bucket=bucket, Key="orders/nothing")


def test_versioned_bucket_no_livelock(gateway, rgw, bucket, tmp_path, relay):
    """RGW 16 on a versioned bucket ignores If-None-Match: * and refuses
    If-Match even with the current ETag.  Probed there, conditional writes are
    off.  Probed in an unversioned bucket (the first rule's), a versioned one
    is found at run time: a 412 to a condition that held (the HEAD finds the
    very ETag it sent) is answered 503 once, no more conditions go to that
    bucket, and the retry passes: a condition of ours never makes the
    current leader's writes fail for good."""
    vb = bucket + "-v"
    c = rgw.client()
    c.create_bucket(Bucket=vb)
    c.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Enabled"})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    probed_there = dir_gateway(gateway, tmp_path / "a", vb, rules=fence_rule(vb))
    wait_log(probed_there, "PutObject does NOT honour conditions")
    assert metric(probed_there, "conditional_writes") == 0
    probed_there.stop()
    rules = fence_rule(bucket) + fence_rule(vb)
    gw = dir_gateway(gateway, tmp_path / "b", bucket, relay, rules=rules)
    wait_cond(gw, True)
    w = acquire(gw, "w", 10000)
    assert put(gw, vb, "orders/v", b"1", w["token"]).status_code == 200
    r = put(gw, vb, "orders/v", b"2", w["token"])
    assert r.status_code == 503 and code_of(r) == "SlowDown", r.text
    assert "fenced writes to it go without conditions from now on" in gw.log()
    for i in range(3, 6):
        r = put(gw, vb, "orders/v", str(i).encode(), w["token"])
        assert r.status_code == 200, r.text
        sent = upstream_puts(relay, "orders/v")
        assert "if-match" not in sent[-1][1] and "if-none-match" not in sent[-1][1], sent[-1]
    assert body_at_rgw(rgw, vb, "orders/v") == b"5"
    assert metric(gw, "conditional_write_slowdowns_total") == 1
    # the unversioned bucket keeps its conditions
    assert put(gw, bucket, "orders/u", b"1", w["token"]).status_code == 200
    assert put(gw, bucket, "orders/u", b"2", w["token"]).status_code == 200
    assert "if-match" in upstream_puts(relay, "orders/u")[-1][1]


def _absence_refused_then_absent(gw, rgw, bucket, relay, key, token):
    """Our If-None-Match: * PUT of key, held by the relay while the key is
    created at RGW (so RGW answers 412), and its answer held while the key is
    deleted again (so the gateway's HEAD finds it absent, as conditioned): a
    create and a delete in between, by another writer of the same epoch."""
    relay.log.clear()
    out = {}

    def ours():
        out["r"] = put(gw, bucket, key, b"ours", token,
                       extra={"x-test-delay-ms": "600", "x-test-tail-delay-ms": "800"})

    th = threading.Thread(target=ours)
    th.start()
    c = rgw.client()
    for event, then in (("held", lambda: c.put_object(Bucket=bucket, Key=key, Body=b"theirs")),
                        ("tail-held", lambda: c.delete_object(Bucket=bucket, Key=key))):
        deadline = time.monotonic() + 20
        while not any(e == event for e, _ in relay.log):
            assert time.monotonic() < deadline, (event, relay.log)
            time.sleep(0.01)
        then()
    th.join(30)
    puts = [h for m, h in upstream_puts(relay, key) if m == "PUT"]
    assert puts and puts[-1].get("if-none-match") == "*", puts
    return out["r"]


def test_absence_refused_once_is_no_proof(gateway, rgw, bucket, tmp_path, relay):
    """A 412 to If-None-Match: * and then an absent key is what a create and
    a delete in between leave, as much as a store refusing a condition that
    held: alone it leaves conditions on (one 503, the retry conditioned
    again).  Only a second such refusal with no such write passing in between
    turns them off for the bucket, so a store that refuses them costs two
    503s, never a livelock.  Turning them off at the first left the bucket
    without conditions until a restart after one benign interleaving."""
    gw = dir_gateway(gateway, tmp_path, bucket, relay)
    wait_cond(gw, True)
    w = acquire(gw, "w", 30000)
    off = "fenced writes to it go without conditions from now on"
    r = _absence_refused_then_absent(gw, rgw, bucket, relay, "orders/t1", w["token"])
    assert r.status_code == 503 and code_of(r) == "SlowDown", r.text
    assert off not in gw.log()
    r = put(gw, bucket, "orders/t1", b"retry", w["token"])  # the retry: conditioned again
    assert r.status_code == 200, r.text
    assert upstream_puts(relay, "orders/t1")[-1][1].get("if-none-match") == "*"
    # that write passed: the suspicion is gone, and one more interleaving proves nothing
    r = _absence_refused_then_absent(gw, rgw, bucket, relay, "orders/t2", w["token"])
    assert r.status_code == 503, r.text
    assert off not in gw.log()
    # a second in a row does
    r = _absence_refused_then_absent(gw, rgw, bucket, relay, "orders/t3", w["token"])
    assert r.status_code == 503, r.text
    wait_log(gw, off)
    r = put(gw, bucket, "orders/t4", b"plain", w["token"])
    assert r.status_code == 200, r.text
    assert "if-none-match" not in upstream_puts(relay, "orders/t4")[-1][1]
