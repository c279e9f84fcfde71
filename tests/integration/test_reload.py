"""SIGHUP reloads the upstream credentials once, for everything the gateway
signs: forwarded requests, the s3 election backend and the checksum-trailer
probe share one signer (gateway/s3client/s3client.c).

The gateway starts with a wrong upstream secret: RGW refuses what it forwards
(403 SignatureDoesNotMatch), the election cannot pass its start-up self-test
(no lock is granted) and the trailer probe gets no answer.  After the config
is rewritten with the right secret and SIGHUP, all three work, without a
restart."""

import json
import os
import signal
import socket
import subprocess
import threading
import time

import requests

from conftest import gateway_bin
from rawhttp import read_response, status
from test_fencing import (LOCK, boto3_with_token, grant, put_then_reset, relay_gateway, rgw_body,
                          wait_relay)

UNTIL = 30  # s: the election's self-test and the trailer probe retry with a backoff


def wait_for(what, fn, timeout=UNTIL):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_sighup_reloads_the_one_signer(gateway, rgw, bucket):
    locks = bucket + "-locks"
    rgw.client().create_bucket(Bucket=locks)
    rgw.client().put_object(Bucket=bucket, Key="r/obj", Body=b"payload")
    gw = gateway({"upstream": {"secret_key_env": "FG_SK_NOW"},
                  "election": {"backend": "s3", "bucket": locks, "prefix": "fencegate/",
                               "min_lease_ms": 3150}},
                 env={"FG_SK_NOW": "not-the-upstream-secret", "FG_SK_LATER": rgw.secret_key})
    r = requests.get(f"{gw.url}/{bucket}/r/obj", timeout=10)
    assert r.status_code == 403 and b"SignatureDoesNotMatch" in r.content, r.content
    r = requests.post(f"{gw.url}/_fencegate/v1/locks/reload/acquire", json={"holder": "w"},
                      timeout=10)
    assert r.status_code != 200, r.text
    assert "aws-chunked checksum trailers" not in gw.log()

    gw.config["upstream"]["secret_key_env"] = "FG_SK_LATER"
    gw.config_path.write_text(json.dumps(gw.config, indent=2) + "\n")
    os.kill(gw.pid, signal.SIGHUP)
    wait_for("reloaded", lambda: "configuration reloaded" in gw.log())

    r = requests.get(f"{gw.url}/{bucket}/r/obj", timeout=10)
    assert r.status_code == 200 and r.content == b"payload", r.content

    def acquired():
        a = requests.post(f"{gw.url}/_fencegate/v1/locks/reload/acquire", json={"holder": "w"},
                          timeout=10)
        return a.status_code == 200 and a.json()
    got = wait_for("the election grants with the new secret", acquired)
    assert got["token"] >= 1
    wait_for("the trailer probe answered",
             lambda: "upstream does not take aws-chunked checksum trailers" in gw.log())
    assert "gw_s3client_set_config" not in gw.log()  # no "keeping the old upstream"


def _reload(gw, nth):
    gw.config_path.write_text(json.dumps(gw.config, indent=2) + "\n")
    os.kill(gw.pid, signal.SIGHUP)
    wait_for("reloaded", lambda: gw.log().count("configuration reloaded") >= nth)


def _start_slow_put(gw, bucket, key, size):
    """An unfenced PUT whose client has sent half its body: streaming to RGW."""
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
    s.sendall((f"PUT /{bucket}/{key} HTTP/1.1\r\nHost: {gw.host}\r\n"
               f"Content-Length: {size}\r\n\r\n").encode())
    s.sendall(b"o" * (size // 2))
    return s


def test_reload_fencing_a_prefix_awaits_the_writes_begun_before_it(gateway, rgw, bucket):
    """A reload that fences a prefix being written: the new lock's first write
    waits until the unfenced write begun before the reload has ended, so it is
    not overwritten by it at RGW.  A reload that changes no rule holds nothing."""
    gw = gateway({"fences": [{"bucket": bucket, "prefix": "other/", "lock": LOCK,
                              "require_token": True}]})
    grant(gw, 1)
    size = 2 * 1024 * 1024

    # the same rules again (what logrotate's SIGHUP does): no hold
    s = _start_slow_put(gw, bucket, "data/k0", size)
    time.sleep(0.3)
    _reload(gw, 1)
    t0 = time.monotonic()
    boto3_with_token(gw, 1).put_object(Bucket=bucket, Key="other/x", Body=b"fenced")
    assert time.monotonic() - t0 < 2
    assert "cover keys they did not" not in gw.log()
    s.sendall(b"o" * (size // 2))
    head, _ = read_response(s)
    s.close()
    assert status(head) == 200, head

    # data/ fenced while an unfenced write into it is in flight
    s = _start_slow_put(gw, bucket, "data/k", size)
    time.sleep(0.3)
    gw.config["fences"].append({"bucket": bucket, "prefix": "data/", "lock": LOCK,
                                "require_token": True})
    _reload(gw, 2)
    done = {}

    def fenced():
        try:
            boto3_with_token(gw, 1).put_object(Bucket=bucket, Key="data/k", Body=b"fenced")
            done["ok"] = time.monotonic()
        except Exception as e:  # noqa: BLE001 - reported below
            done["err"] = e
    th = threading.Thread(target=fenced)
    th.start()
    time.sleep(1.5)
    early = dict(done)  # judged below, after what RGW kept
    s.sendall(b"o" * (size // 2))
    head, _ = read_response(s)
    old_end = time.monotonic()
    s.close()
    assert status(head) == 200, head
    th.join(30)
    assert "ok" in done, done
    # the fenced write is the last one at RGW; without the hold the older landed after it
    body = rgw_body(rgw, bucket, "data/k")
    assert body == b"fenced", f"RGW kept {body[:8]!r}... ({len(body)} bytes)"
    assert not early, f"the fenced write did not wait for the older one: {early}"
    assert done["ok"] > old_end - 0.05
    assert "cover keys they did not" in gw.log()
    assert "have ended; the locks it widened" in gw.log()
    # and the hold is gone: the next fenced write goes at once
    t0 = time.monotonic()
    boto3_with_token(gw, 1).put_object(Bucket=bucket, Key="data/k2", Body=b"x")
    assert time.monotonic() - t0 < 2


def _inflight_slot(bucket):
    """gw_inflight_slot (gateway/base/inflight.c): the slot a bucket's writes count in."""
    h = 0xcbf29ce484222325
    for c in bucket.encode():
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % 64


def test_reload_does_not_wait_for_writes_into_buckets_whose_rules_did_not_change(
        gateway, rgw, bucket):
    """A key's lock changes only where its bucket's rules do: a reload that
    fences a prefix of one bucket does not hold the new lock's writes for a
    long write into another bucket (one with no rule here),
    and still holds them for one into the changed bucket."""
    other = next(f"{bucket}-o{i}" for i in range(64)
                 if _inflight_slot(f"{bucket}-o{i}") != _inflight_slot(bucket))
    rgw.client().create_bucket(Bucket=other)
    gw = gateway({"fences": [{"bucket": bucket, "prefix": "other/", "lock": LOCK,
                              "require_token": True}]})
    grant(gw, 1)
    size = 2 * 1024 * 1024
    s = _start_slow_put(gw, other, "big", size)  # unfenced, into the other bucket
    time.sleep(0.3)
    gw.config["fences"].append({"bucket": bucket, "prefix": "data/", "lock": LOCK,
                                "require_token": True})
    _reload(gw, 1)
    assert "cover keys they did not" in gw.log()
    done = {}

    def fenced(key, body):
        try:
            boto3_with_token(gw, 1).put_object(Bucket=bucket, Key=key, Body=body)
            done["ok"] = time.monotonic()
        except Exception as e:  # noqa: BLE001 - reported below
            done["err"] = e
    th = threading.Thread(target=fenced, args=("data/k", b"fenced"))
    th.start()
    th.join(2)
    early = dict(done)  # judged after the other write has ended
    s.sendall(b"o" * (size // 2))
    head, _ = read_response(s)
    s.close()
    th.join(30)
    assert status(head) == 200, head
    assert "ok" in early, f"the fenced write waited for a write into another bucket: {done}"
    assert rgw_body(rgw, bucket, "data/k") == b"fenced"
    assert len(rgw_body(rgw, other, "big")) == size

    # the same with a write into the changed bucket still in flight: held until it ends
    s = _start_slow_put(gw, bucket, "free/late", size)  # unfenced
    time.sleep(0.3)
    gw.config["fences"].append({"bucket": bucket, "prefix": "more/", "lock": LOCK,
                                "require_token": True})
    _reload(gw, 2)
    done.clear()
    th = threading.Thread(target=fenced, args=("more/k", b"x"))
    th.start()
    time.sleep(1.5)
    early = dict(done)
    s.sendall(b"o" * (size // 2))
    head, _ = read_response(s)
    s.close()
    th.join(30)
    assert status(head) == 200, head
    assert "ok" in done, done
    assert not early, f"the fenced write did not wait for the write into its bucket: {early}"


def test_reload_moving_a_prefix_to_another_lock_awaits_a_write_whose_client_left(
        gateway, rgw, bucket):
    """A reload that moves orders/ from one lock to another: the new lock's
    first write waits for the old lock's write that was sent whole and whose
    client reset (it runs on without its client until the store answers), so
    that write does not land after it.  The two locks share no barrier: only
    the reload's hold orders them."""
    relay, gw = relay_gateway(gateway, rgw, bucket)
    try:
        grant(gw, 1)
        put_then_reset(gw, relay, f"{bucket}/orders/rst", b"old lock's zombie")
        gw.config["fences"][0]["lock"] = "orders-v2"
        _reload(gw, 1)
        grant(gw, 1, lock="orders-v2")
        r2 = requests.put(f"{gw.url}/{bucket}/orders/rst", data=b"new lock",
                          headers={"X-Fencing-Token": "1"}, timeout=30)
        assert r2.status_code == 200, r2.text
        assert wait_relay(relay, "forwarded-delayed"), relay.log
        time.sleep(0.5)
        assert rgw_body(rgw, bucket, "orders/rst") == b"new lock"
        events = [e for e, _ in relay.log]
        assert events.index("forwarded-delayed") < events.index("forwarded-put"), events
    finally:
        relay.close()


def test_a_head_split_across_a_reload_is_judged_under_the_new_rules(gateway, rgw, bucket):
    """A request whose head began before a reload that fences its prefix and
    ended after it: classified under the rules in force when its head ended
    (the router's turn), so it is refused for want of a token and nothing
    reaches RGW.  Under the rules of its first byte it would go unfenced."""
    gw = gateway({"fences": [{"bucket": bucket, "prefix": "other/", "lock": LOCK,
                              "require_token": True}]})
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
    try:
        s.sendall(f"PUT /{bucket}/data/split HTTP/1.1\r\nHost: {gw.host}\r\n".encode())
        time.sleep(0.3)  # the head's first half is parsed under the old rules
        gw.config["fences"].append({"bucket": bucket, "prefix": "data/", "lock": LOCK,
                                    "require_token": True})
        _reload(gw, 1)
        time.sleep(0.5)  # every loop has switched (a message each, at once)
        s.sendall(b"Content-Length: 5\r\n\r\nsplit")
        head, body = read_response(s)
    finally:
        s.close()
    assert status(head) == 428 and b"MissingFencingToken" in body, (head, body)
    assert rgw_body(rgw, bucket, "data/split") is None, "the write landed unfenced"


def _fences_digest(gw):
    text = requests.get(f"{gw.url}/metrics", timeout=10).text
    info = [ln for ln in text.splitlines() if ln.startswith("fencegate_config_info{")]
    reloads = [ln for ln in text.splitlines() if ln.startswith("fencegate_config_reloads_total ")]
    assert len(info) == 1 and len(reloads) == 1, text[:2000]
    digest = info[0].split('fences="', 1)[1].split('"', 1)[0]
    assert len(digest) == 16 and info[0].endswith("} 1"), info
    return digest, int(reloads[0].split()[1])


def test_the_fences_digest_shows_which_gateways_agree(gateway, rgw, bucket):
    """fencegate_config_info{fences} is equal on two gateways with the same
    rules (whatever else their files say), differs once one of them is
    reloaded with another rule, and agrees again when the other is too;
    fencegate_config_reloads_total counts the reloads that took effect (not
    one of an unchanged file)."""
    rules = [{"bucket": bucket, "prefix": "orders/", "lock": LOCK, "require_token": True}]
    a = gateway({"fences": list(rules)})
    b = gateway({"fences": list(rules), "workers": 1})
    da, na = _fences_digest(a)
    db, nb = _fences_digest(b)
    assert da == db and na == nb == 0
    for gw in (a, b):
        gw.config["fences"].append({"bucket": bucket, "prefix": "data/", "lock": LOCK})
    _reload(a, 1)
    time.sleep(0.5)  # every loop has switched
    da2, na2 = _fences_digest(a)
    assert da2 != db and na2 == 1, (da2, db)
    _reload(b, 1)
    time.sleep(0.5)
    db2, nb2 = _fences_digest(b)
    assert db2 == da2 and nb2 == 1
    # a reload of the same file replaces nothing: neither the digest nor the count moves
    _reload(a, 2)
    time.sleep(0.5)
    assert _fences_digest(a) == (da2, 1)
    # an edit beside the rules: the digest unchanged, one more reload
    a.config["metrics"] = {"max_locks": 123}
    _reload(a, 3)
    time.sleep(0.5)
    assert _fences_digest(a) == (da2, 2)


def test_a_rule_that_never_matches_is_warned_about(gateway, bucket, tmp_path):
    """First match wins: a rule behind one whose prefix starts its own decides
    nothing.  check-config says so (and still passes the file), serve logs it
    (at start, and as here at a reload), a reload adding it holds nothing, and
    the fences digest does not count it."""
    rules = [{"bucket": bucket, "prefix": "d/", "lock": LOCK, "require_token": True}]
    gw = gateway({"fences": rules})
    before, _ = _fences_digest(gw)
    gw.config["fences"].append({"bucket": bucket, "prefix": "d/x/", "lock": "other-lock",
                                "require_token": True})
    p = tmp_path / "shadowed.json"
    p.write_text(json.dumps(gw.config))
    env = dict(os.environ, FG_UP_AK="ak", FG_UP_SK="sk")  # named by the gateway's config
    out = subprocess.run([gateway_bin(), "check-config", "-c", str(p)],
                         capture_output=True, text=True, timeout=30, env=env)
    want = (f'fences[1] (bucket "{bucket}", prefix "d/x/") never matches: fences[0] '
            '(prefix "d/") comes first and takes its keys')
    assert out.returncode == 0 and "configuration OK" in out.stdout, out
    assert want in out.stderr, out.stderr
    _reload(gw, 1)
    wait_for("the warning logged", lambda: want in gw.log())
    assert "cover keys they did not" not in gw.log()  # nothing it decides changed
    assert _fences_digest(gw) == (before, 1)


def _metric(gw, name):
    for ln in requests.get(f"{gw.url}/metrics", timeout=10).text.splitlines():
        if ln.startswith(name + " "):
            return float(ln.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_reloads_go_on_past_any_count_and_an_unchanged_file_replaces_nothing(
        gateway, bucket, tmp_path):
    """A gateway reloaded daily by logrotate, or often by config management, keeps
    reloading: an unchanged file (its bytes and its secret files') keeps the
    configuration in force and only reopens the access log, and edits are not
    capped.  The first 64 reloads of an earlier build were the last."""
    log = tmp_path / "access.log"
    secret = tmp_path / "p.secret"
    secret.write_text("s3cr3t-one\n")
    gw = gateway({"access_log": str(log),
                  "principals": [{"name": "p", "access_key": "AKIDRELOADTEST", "secret_key_file":
                                  str(secret)}],
                  "allow_anonymous": True,
                  "metrics": {"max_locks": 100}})
    for n in range(1, 71):  # logrotate's SIGHUP, 70 times: nothing replaced
        _reload(gw, n)
    assert gw.log().count("(unchanged: the access log reopened)") == 70
    assert _metric(gw, "fencegate_config_reloads_total") == 0
    secret.write_text("s3cr3t-two\n")  # the file's bytes the same, a secret file's not
    _reload(gw, 71)
    assert gw.log().count("(unchanged") == 70
    assert _metric(gw, "fencegate_config_reloads_total") == 1
    for n in range(72, 142):  # 70 edits: past the 64 an earlier build allowed
        gw.config["metrics"]["max_locks"] = 100 + n
        _reload(gw, n)
    assert "reload refused" not in gw.log()
    assert _metric(gw, "fencegate_config_reloads_total") == 71
    os.rename(log, str(log) + ".1")  # and logrotate still works
    _reload(gw, 142)
    r = requests.get(f"{gw.url}/{bucket}/free/after-rotation", timeout=10)
    rid = r.headers["x-amz-request-id"]
    wait_for("the request in the new access log",
             lambda: log.exists() and rid in log.read_text())
