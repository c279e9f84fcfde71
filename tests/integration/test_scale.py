"""Issue 28, scale: paged lock and fence listings (every entry exactly once,
whatever the total), a lock list that agrees with each lock's own GET after a
restart.

The 25,000 locks are seeded straight into the store by
tests/helpers/store_seed (election cache and fence table, grouped commits):
acquiring them one by one would take a minute."""
import concurrent.futures
import os
import subprocess
import time

import pytest
import requests

API = "/_fencegate/v1"
FLEET = 25000


def _helper(name):
    build = os.environ.get("FENCEGATE_BUILD") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build")
    path = os.path.abspath(os.path.join(build, "tests/helpers", name))
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: run make (or set FENCEGATE_BUILD)")
    return path


def seed(gw, prefix, count, epoch=1):
    out = subprocess.run([_helper("store_seed"), str(gw.data_dir), prefix, str(epoch), str(count)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def wait_ready(gw, timeout=30):
    deadline = time.monotonic() + timeout
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def dir_gateway(gateway, tmp_path, bucket=None, extra=None):
    cfg = {"gateway_id": "gw-a",
           "election": {"backend": "dir", "path": str(tmp_path / "locks"), "min_lease_ms": 200}}
    if bucket is not None:
        cfg["fences"] = [
            {"bucket": bucket, "prefix": "orders/", "lock": "orders", "require_token": True},
            {"bucket": bucket, "prefix": "quiet/", "lock": "quiet", "require_token": True},
        ]
    cfg.update(extra or {})
    gw = gateway(cfg)
    wait_ready(gw)
    return gw


def page_all(gw, what, limit=None, session=None):
    """Every page of GET /locks or /fences; returns (entries, pages)."""
    s = session or requests.Session()
    out, pages, after = [], [], None
    while True:
        params = {}
        if limit is not None:
            params["limit"] = limit
        if after is not None:
            params["after"] = after
        r = s.get(f"{gw.url}{API}/{what}", params=params, timeout=60)
        assert r.status_code == 200, r.text
        j = r.json()
        pages.append(j)
        out.extend(j[what])
        assert j["truncated"] == (j["next"] is not None), j.keys()
        if not j["truncated"]:
            return out, pages
        after = j["next"]


def test_locks_paged_each_exactly_once(gateway, rgw, tmp_path):
    gw = dir_gateway(gateway, tmp_path)
    seed(gw, "L", FLEET)
    t0 = time.monotonic()
    got, pages = page_all(gw, "locks", limit=997)  # an odd size: no page boundary on a round name
    took = time.monotonic() - t0
    names = [x["lock"] for x in got]
    assert len(names) == FLEET, len(names)
    assert len(set(names)) == FLEET
    assert names == sorted(names)
    assert set(names) == {f"L{i:06d}" for i in range(FLEET)}
    assert len(pages) == (FLEET + 996) // 997
    assert all(len(p["locks"]) == 997 for p in pages[:-1])
    # the default page is 1000 and says there is more
    j = requests.get(f"{gw.url}{API}/locks", timeout=60).json()
    assert len(j["locks"]) == 1000 and j["truncated"] is True and j["next"]
    # a seeded lock has no lock file: its epoch is known, its lease is not
    assert j["locks"][0]["known"] is False and j["locks"][0]["live"] is None
    print(f"\n/locks: {FLEET} locks in {len(pages)} pages, {took:.2f} s")


def test_fences_paged_each_exactly_once(gateway, rgw, tmp_path):
    gw = dir_gateway(gateway, tmp_path)
    seed(gw, "F", FLEET, epoch=3)
    t0 = time.monotonic()
    got, pages = page_all(gw, "fences", limit=4999)
    took = time.monotonic() - t0
    names = [x["lock"] for x in got]
    assert len(names) == FLEET and len(set(names)) == FLEET
    assert names == sorted(names)
    assert set(names) == {f"F{i:06d}" for i in range(FLEET)}
    assert all(x["token"] == 3 for x in got)
    assert len(pages) == 6
    # the whole table in one answer is no longer possible, nor an error: 10,000 at most
    j = requests.get(f"{gw.url}{API}/fences", params={"limit": 10000}, timeout=60).json()
    assert len(j["fences"]) == 10000 and j["truncated"] is True
    print(f"\n/fences: {FLEET} entries in {len(pages)} pages, {took:.2f} s")


@pytest.mark.parametrize("what", ["locks", "fences"])
def test_bad_cursors_and_limits_are_400(gateway, rgw, tmp_path, what):
    gw = dir_gateway(gateway, tmp_path)
    seed(gw, "B", 30)
    first = requests.get(f"{gw.url}{API}/{what}", params={"limit": 10}, timeout=10).json()
    good = first["next"]
    other = "fences" if what == "locks" else "locks"
    foreign = requests.get(f"{gw.url}{API}/{other}", params={"limit": 10}, timeout=10).json()["next"]
    tampered = good[:-1] + ("0" if good[-1] != "0" else "1")
    for bad in [tampered, foreign, good[:-3], "x" * 5000, "", "1700000000000.42", "l1zz.00000000",
                "%00", good + "00"]:
        r = requests.get(f"{gw.url}{API}/{what}", params={"after": bad}, timeout=10)
        assert r.status_code == 400, (bad, r.status_code, r.text)
        assert r.json()["error"] == "bad_cursor", r.text
    for bad in ["0", "10001", "-1", "x", "1.5"]:
        r = requests.get(f"{gw.url}{API}/{what}", params={"limit": bad}, timeout=10)
        assert r.status_code == 400 and r.json()["error"] == "bad_limit", (bad, r.text)
    r = requests.get(f"{gw.url}{API}/{what}", params={"after": good, "limit": 100}, timeout=10)
    assert r.status_code == 200 and len(r.json()[what]) == 20
    assert gw.alive()


def _acquire(gw, lock, holder, lease_ms=60000, session=None):
    s = session or requests
    r = s.post(f"{gw.url}{API}/locks/{lock}/acquire",
               json={"holder": holder, "lease_ms": lease_ms}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _release(gw, grant, session=None):
    s = session or requests
    r = s.post(f"{gw.url}{API}/locks/{grant['lock']}/release",
               json={"token": grant["token"], "lease_id": grant["lease_id"]}, timeout=30)
    assert r.status_code == 200, r.text


VIEW = ("lock", "token", "live", "holder", "released", "lease_ms", "granted_by", "renewals")


def test_list_after_restart_agrees_with_get(gateway, rgw, tmp_path):
    gw = dir_gateway(gateway, tmp_path)
    s = requests.Session()
    grants = [_acquire(gw, f"r{i:04d}", f"h{i}", session=s) for i in range(240)]
    for g in grants[::4]:
        _release(gw, g, session=s)
    again = [_acquire(gw, g["lock"], "second", session=s) for g in grants[::8]]
    assert all(a["token"] == 2 for a in again)
    gw.restart(wait=True)
    wait_ready(gw)
    listed, _ = page_all(gw, "locks", limit=50, session=s)
    assert len(listed) == 240
    live = 0
    for x in listed:
        one = s.get(f"{gw.url}{API}/locks/{x['lock']}", timeout=30).json()
        assert x["known"] is True, x
        assert {k: x[k] for k in VIEW} == {k: one[k] for k in VIEW}, (x, one)
        live += x["live"]
    # released: every 4th, re-acquired: every 8th (of those), so 180 + 30 live
    assert live == 210, live

