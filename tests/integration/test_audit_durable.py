"""G7, durably: a refusal is answered only once its audit record has
committed, so a gateway killed between the two loses the answer, never the
record.  The store's commits are held in flight by a slow disk
(tests/helpers/preload/slow_sync.so, LD_PRELOADed: every fdatasync waits as
long as a file says), which widens the window between queueing a record and
its commit to something a test can kill the gateway inside."""
import os
import threading
import time

import pytest
import requests

from conftest import _san_env
from test_windows import LOCK, acquire, api, dir_gateway, put

SLOW_MS = 1500


def _shim():
    build = os.environ.get("FENCEGATE_BUILD") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build")
    path = os.path.abspath(os.path.join(build, "tests/helpers/preload/slow_sync.so"))
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: run make (or set FENCEGATE_BUILD)")
    return path


def _slow_gateway(gateway, tmp_path, bucket):
    slow = tmp_path / "slow-sync-ms"
    env = {"LD_PRELOAD": _shim(), "FENCEGATE_SLOW_SYNC_FILE": str(slow)}
    # a sanitized gateway accepts a preloaded library ahead of its runtime
    asan = os.environ.get("ASAN_OPTIONS") or _san_env()["ASAN_OPTIONS"]
    env["ASAN_OPTIONS"] = asan + ":verify_asan_link_order=0"
    gw = gateway({"gateway_id": "gw-a",
                  "election": {"backend": "dir", "path": str(tmp_path / "locks"),
                               "min_lease_ms": 200},
                  "fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                              "require_token": True}]}, env=env)
    return gw, slow


def _stale_token(gw):
    """A token the fence refuses: w1's, after w1 released and w2 acquired."""
    w1 = acquire(gw, "w1", 10000)
    r = api(gw, f"{LOCK}/release", {"token": w1["token"], "lease_id": w1["lease_id"]})
    assert r.status_code == 200, r.text
    w2 = acquire(gw, "w2", 10000)
    assert w2["token"] > w1["token"]
    return w1["token"]


def _records(gw):
    r = requests.get(f"{gw.url}/_fencegate/v1/audit", params={"lock": LOCK}, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["records"]


def test_refusal_waits_for_its_record(gateway, rgw, bucket, tmp_path):
    """On a slow disk the 409 comes after the commit, and the record is there the
    moment the worker holds its answer."""
    gw, slow = _slow_gateway(gateway, tmp_path, bucket)
    stale = _stale_token(gw)
    slow.write_text(str(SLOW_MS))
    t0 = time.monotonic()
    r = put(gw, bucket, "orders/k", b"zombie", stale)
    took = time.monotonic() - t0
    slow.unlink()
    assert r.status_code == 409 and "<Code>StaleFencingToken</Code>" in r.text, r.text
    assert took >= SLOW_MS / 1000 * 0.9, f"answered in {took:.3f} s, before the commit"
    recs = _records(gw)  # no waiting: committed before the answer
    assert [(x["kind"], x["token"]) for x in recs] == [("stale", stale)], recs


def test_kill9_before_commit_loses_the_answer_not_the_record(gateway, rgw, bucket, tmp_path):
    """kill -9 while the record is in flight: the worker gets no refusal (its
    connection dies), and the restarted gateway has no record of an answer it
    never gave.  On the version that answered at queueing time, the worker held
    a 409 whose record was gone."""
    gw, slow = _slow_gateway(gateway, tmp_path, bucket)
    stale = _stale_token(gw)
    before = len(_records(gw))
    slow.write_text(str(SLOW_MS * 4))
    out = {}

    def zombie():
        try:
            out["r"] = put(gw, bucket, "orders/k", b"zombie", stale, timeout=60)
        except requests.RequestException as e:
            out["e"] = e

    th = threading.Thread(target=zombie)
    th.start()
    th.join(SLOW_MS / 1000)  # the record is queued and its commit is held
    answered = "r" in out
    gw.kill9()
    th.join(30)
    slow.unlink()
    assert not answered, f"refused before its record committed: {out['r'].status_code}"
    assert "e" in out, out
    gw.restart(wait=True)
    recs = _records(gw)
    assert len(recs) == before, recs  # the kill landed before the commit: nothing recorded
    # and the fence still refuses it, recorded this time
    r = put(gw, bucket, "orders/k", b"zombie", stale)
    assert r.status_code == 409, r.text
    assert [x["token"] for x in _records(gw)][before:] == [stale]
