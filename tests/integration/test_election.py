"""The election through the gateway's HTTP API, on both backends: `dir` (a
local directory) and `s3` (epoch lock files in a bucket of the real RGW, with
its real conditional writes).  Then the zombie story end to end: election,
fencing and audit together, with real S3 clients."""

import concurrent.futures
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import requests
from botocore.exceptions import ClientError

# s3: a window from a read loses up to 2 s to whole-second HTTP dates, so a
# holder renewing at a third of its lease needs >= 3150 ms (commit margin 100).
LEASE_MS = 3500


@pytest.fixture(params=["dir", "s3"])
def egw(request, gateway, rgw, bucket, tmp_path):
    """A gateway with an election on the given backend and a fence rule."""
    if request.param == "dir":
        election = {"backend": "dir", "path": str(tmp_path / "locks")}
    else:
        locks = bucket + "-locks"
        rgw.client().create_bucket(Bucket=locks)
        election = {"backend": "s3", "bucket": locks, "prefix": "fencegate/",
                    "min_lease_ms": 3150, "shared_window_ms": 1000}
    election.update({"default_lease_ms": LEASE_MS})
    election.setdefault("min_lease_ms", 200)
    gw = gateway({"election": election,
                  "fences": [{"bucket": bucket, "prefix": "orders/", "lock": "orders",
                              "require_token": True}]})
    deadline = time.monotonic() + 20
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline, requests.get(f"{gw.url}/readyz", timeout=5).text
        time.sleep(0.05)
    gw.backend = request.param
    return gw


def api(gw, path, body=None, method=None, timeout=30, session=None):
    s = session or requests
    url = f"{gw.url}/_fencegate/v1/locks/{path}"
    if body is None and method != "POST":
        return s.get(url, timeout=timeout)
    return s.post(url, json=body if body is not None else {}, timeout=timeout)


def acquire(gw, lock, holder, session=None, **kw):
    return api(gw, f"{lock}/acquire", dict(holder=holder, **kw), session=session)


def test_contenders_one_winner_per_epoch(egw):
    """32 contenders acquire the same free lock at the same moment: exactly one
    wins each epoch, the others see 409 with the winner; many rounds."""
    gw = egw
    rounds = 6
    last = 0
    sessions = [requests.Session() for _ in range(32)]
    for rnd in range(rounds):
        barrier = threading.Barrier(32)

        def contend(i):
            barrier.wait()
            return acquire(gw, "race", f"w{i}", session=sessions[i])

        with concurrent.futures.ThreadPoolExecutor(32) as ex:
            results = list(ex.map(contend, range(32)))
        won = [r for r in results if r.status_code == 200]
        lost = [r for r in results if r.status_code == 409]
        assert len(won) == 1, [(r.status_code, r.text) for r in results]
        assert len(lost) == 31, [(r.status_code, r.text) for r in results if r.status_code != 409]
        w = won[0].json()
        assert w["token"] == last + 1
        last = w["token"]
        for r in lost:
            assert r.json()["error"] == "held"
            assert r.json()["holder"] == w["holder"] and r.json()["token"] == w["token"]
        r = api(gw, "race/release", {"token": w["token"], "lease_id": w["lease_id"]})
        assert r.status_code == 200, r.text
    for s in sessions:
        s.close()


def test_expired_holder_replaced_by_waiter(egw):
    gw = egw
    a = acquire(gw, "lease", "a", lease_ms=LEASE_MS).json()
    t0 = time.monotonic()
    b = acquire(gw, "lease", "b", lease_ms=LEASE_MS, wait_ms=10000)  # a stops renewing
    waited = time.monotonic() - t0
    assert b.status_code == 200, b.text
    assert b.json()["token"] == a["token"] + 1
    assert waited < (LEASE_MS + 250) / 1000 + 0.2, waited  # lease + 250 ms (+ request overhead)
    # a renews too late: superseded, with the current holder
    r = api(gw, "lease/renew", {"token": a["token"], "lease_id": a["lease_id"]})
    assert r.status_code == 409 and r.json()["holder"] == "b", r.text


def test_renew_release_and_wrong_lease_id(egw):
    gw = egw
    a = acquire(gw, "rr", "a", lease_ms=5000).json()
    r = api(gw, "rr/renew", {"token": a["token"], "lease_id": "0" * 64})
    assert r.status_code == 403
    r = api(gw, "rr/renew", {"token": a["token"], "lease_id": a["lease_id"]})
    assert r.status_code == 200 and r.json()["renewals"] == 1, r.text
    r = api(gw, "rr/release", {"token": a["token"], "lease_id": "f" * 64})
    assert r.status_code == 403
    r = api(gw, "rr/release", {"token": a["token"], "lease_id": a["lease_id"]})
    assert r.status_code == 200
    t0 = time.monotonic()
    b = acquire(gw, "rr", "b")
    assert b.status_code == 200 and b.json()["token"] == a["token"] + 1
    took = time.monotonic() - t0
    if gw.backend == "dir":
        assert took < 1.0  # the only gateway: at once, no waiting for the old lease
    else:
        # a shared election (s3): after shared_window_ms + commit_margin_ms (1000 + 100),
        # when every other gateway's write window has closed; never the old lease (3.5 s)
        assert 1.1 <= took < 3.0, took
    for body in ({"holder": ""}, {"holder": "x", "lease_ms": -1}, {"holder": "x", "bogus": 1}):
        assert acquire(gw, "rr", **{"holder": "x"}).status_code in (200, 409)
        r = api(gw, "rr/acquire", body)
        assert r.status_code == 400, (body, r.text)
    r = requests.post(f"{gw.url}/_fencegate/v1/locks/rr/acquire", data=b"{not json",
                      timeout=10)
    assert r.status_code == 400 and "JSON" in r.json()["message"]
    r = requests.post(f"{gw.url}/_fencegate/v1/locks/bad%20name/acquire", json={"holder": "x"},
                      timeout=10)
    assert r.status_code == 400


def test_get_long_poll_wakes_on_change(egw):
    gw = egw
    a = acquire(gw, "watch", "a", lease_ms=10000).json()
    out = {}

    def poll():
        t0 = time.monotonic()
        out["r"] = api(gw, f"watch?after={a['token']}&wait_ms=10000")
        out["t"] = time.monotonic() - t0

    th = threading.Thread(target=poll)
    th.start()
    time.sleep(0.5)
    api(gw, "watch/release", {"token": a["token"], "lease_id": a["lease_id"]})
    th.join(15)
    assert out["r"].status_code == 200
    assert out["r"].json()["released"] is True
    assert out["t"] < 2.0, out["t"]


def test_restart_loses_nothing(egw):
    gw = egw
    a = acquire(gw, "persist", "a", lease_ms=30000).json()
    gw.kill9()
    gw.restart()
    deadline = time.monotonic() + 20
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    r = acquire(gw, "persist", "b")
    assert r.status_code == 409 and r.json()["holder"] == "a" and r.json()["token"] == a["token"]
    r = api(gw, "persist/release", {"token": a["token"], "lease_id": a["lease_id"]})
    assert r.status_code == 200
    assert acquire(gw, "persist", "b").json()["token"] == a["token"] + 1


def with_token(gw, token, lock="orders"):
    c = gw.client()

    def add(request, **kwargs):
        request.headers["X-Fencing-Token"] = str(token)
        request.headers["X-Fencing-Lock"] = lock
    c.meta.events.register("before-sign.s3.*", add)
    return c


def test_zombie_story_with_election(egw, rgw, bucket):
    """A acquires and writes; A stalls past its lease; B acquires and writes; A
    wakes and writes with its old token: 409, B's object stays, audited."""
    gw = egw
    a = acquire(gw, "orders", "worker-a", lease_ms=LEASE_MS).json()
    with_token(gw, a["token"]).put_object(Bucket=bucket, Key="orders/o", Body=b"A")
    b = acquire(gw, "orders", "worker-b", lease_ms=30000, wait_ms=10000).json()  # A stalls
    assert b["token"] == a["token"] + 1
    with_token(gw, b["token"]).put_object(Bucket=bucket, Key="orders/o", Body=b"B")
    with pytest.raises(ClientError) as e:
        with_token(gw, a["token"]).put_object(Bucket=bucket, Key="orders/o", Body=b"A zombie")
    assert e.value.response["Error"]["Code"] == "StaleFencingToken"
    assert rgw.client().get_object(Bucket=bucket, Key="orders/o")["Body"].read() == b"B"
    recs = requests.get(f"{gw.url}/_fencegate/v1/audit", params={"lock": "orders"},
                        timeout=10).json()["records"]
    assert [(r["kind"], r["token"], r["current_token"]) for r in recs] == \
        [("stale", a["token"], b["token"])]
    # a token never granted is refused after one look at the epoch files (G4)
    with pytest.raises(ClientError) as e:
        with_token(gw, b["token"] + 5).put_object(Bucket=bucket, Key="orders/o", Body=b"forged")
    assert e.value.response["Error"]["Code"] == "FencingTokenNotGranted"
    fences = requests.get(f"{gw.url}/_fencegate/v1/fences", timeout=10).json()["fences"]
    assert {f["lock"]: f["token"] for f in fences}["orders"] == b["token"]
