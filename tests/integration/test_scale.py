"""Scale: paged lock and fence listings (every entry exactly once,
whatever the total), a lock list that agrees with each lock's own GET after a
restart, and an audit log that one flooding client cannot wipe, on one lock
or over many (the per-lock and per-principal quotas: DESIGN.md "Audit
retention under a flood").

The 25,000 locks are seeded straight into the store by
tests/helpers/store_seed (election cache and fence table, grouped commits):
acquiring them one by one would take a minute."""
import concurrent.futures
import itertools
import json
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
    # `fencegate lock show` with no lock pages through them all
    from test_lock_cli import lock
    r = lock(gw, "show")
    assert r.returncode == 0, r.stderr
    assert sorted(x["lock"] for x in json.loads(r.stdout)["locks"]) == names
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


# ---- the audit under a flood ----

def _stale(gw, lock):
    """A token the fence refuses for lock: the first holder's, after a second took over."""
    g1 = _acquire(gw, lock, "first", lease_ms=60000)
    _release(gw, g1)
    g2 = _acquire(gw, lock, "second", lease_ms=60000)
    assert g2["token"] > g1["token"]
    return g1["token"]


def _put(gw, bucket, lock, key, token, session=None):
    s = session or requests
    return s.put(f"{gw.url}/{bucket}/{key}", data=b"zombie", timeout=30,
                 headers={"X-Fencing-Token": str(token), "X-Fencing-Lock": lock})


def _refused(r):
    assert r.status_code == 409 and "<Code>StaleFencingToken</Code>" in r.text, r.text
    rid = r.headers.get("x-amz-request-id")
    assert rid, r.headers
    return rid


def _audit(gw, lock):
    """Every record of lock (paged) and the quota counters."""
    recs, after = [], None
    while True:
        params = {"lock": lock, "limit": 1000}
        if after:
            params["after"] = after
        j = requests.get(f"{gw.url}{API}/audit", params=params, timeout=30).json()
        recs.extend(j["records"])
        after = j["next"]
        if not after:
            return recs, j["lock_kept"], j["lock_dropped"]


QUOTA = 20
MAX_RECORDS = 200
FLOOD = 600


_KEYS = itertools.count()


def _flood(gw, bucket, token, n, threads=8, same_key=False):
    """n stale writes on "orders" from one client, 8 at a time: each on a key of
    its own (distinct refusals, which the quota bounds), or all on one key
    (identical refusals, which coalesce)."""
    sessions = [requests.Session() for _ in range(threads)]

    def one(i):
        key = "orders/k" if same_key else f"orders/k{next(_KEYS)}"
        return _refused(_put(gw, bucket, "orders", key, token, session=sessions[i % threads]))

    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        return list(ex.map(one, range(n)))


def flood_gateway(gateway, tmp_path, bucket):
    return dir_gateway(gateway, tmp_path, bucket, extra={
        "audit": {"max_records": MAX_RECORDS, "max_records_per_lock": QUOTA}})


def test_flood_leaves_other_locks_records(gateway, rgw, bucket, tmp_path):
    """600 distinct stale writes on one lock, in a log of at most 200 records:
    the quiet lock's records from before and during the flood stay findable
    by their request ids; the flood keeps its first and newest records and
    counts the rest."""
    gw = flood_gateway(gateway, tmp_path, bucket)
    zombie = _stale(gw, "orders")
    other = _stale(gw, "quiet")
    before = _refused(_put(gw, bucket, "quiet", "quiet/k", other))
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        flood = ex.submit(_flood, gw, bucket, zombie, FLOOD)
        time.sleep(0.2)
        during = _refused(_put(gw, bucket, "quiet", "quiet/k2", other))
        rids = flood.result()
    recs, kept, dropped = _audit(gw, "quiet")
    assert {before, during} <= {r["request_id"] for r in recs}, recs
    assert (kept, dropped) == (2, 0)
    recs, kept, dropped = _audit(gw, "orders")
    assert len(recs) == kept == QUOTA, len(recs)
    assert kept + dropped == FLOOD
    found = [r["request_id"] for r in recs]
    assert found[-1] in rids and recs[0]["request_id"] in rids


def test_quota_refusal_answers_409_with_findable_id(gateway, rgw, bucket, tmp_path):
    """Past its quota, a lock's refusal is still answered 409 only once its
    record committed (G7), and the audit API finds its request id at once."""
    gw = flood_gateway(gateway, tmp_path, bucket)
    zombie = _stale(gw, "orders")
    first = _flood(gw, bucket, zombie, 1, threads=1)[0]
    _flood(gw, bucket, zombie, 3 * QUOTA)
    s = requests.Session()
    for i in range(5):
        rid = _refused(_put(gw, bucket, "orders", f"orders/past{i}", zombie, session=s))
        recs, kept, dropped = _audit(gw, "orders")  # no wait: committed before the 409
        ids = [r["request_id"] for r in recs]
        assert rid == ids[-1], (rid, ids[-3:])
        assert ids[0] == first
        assert kept == QUOTA and dropped > 0


def _by_id(gw, rid):
    """GET /audit?request_id=: the records (zero or one) answered for rid."""
    r = requests.get(f"{gw.url}{API}/audit", params={"request_id": rid}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["records"]


IDENTICAL = 400


def test_identical_flood_coalesces_every_id_findable(gateway, rgw, bucket, tmp_path):
    """400 identical stale writes from one client (a retry loop), 8 at a
    time: each is answered 409 (only once its count committed) with a
    request id, the first's plain, the n-th "<first's>.<n>", in the header
    and the document; the lock holds one record with count 400, which each
    of those ids finds; another lock's records from before and during the
    flood stay findable; the quota counts one record."""
    gw = flood_gateway(gateway, tmp_path, bucket)
    zombie = _stale(gw, "orders")
    other = _stale(gw, "quiet")
    before = _refused(_put(gw, bucket, "quiet", "quiet/k", other))
    sessions = [requests.Session() for _ in range(8)]

    def one(i):
        r = _put(gw, bucket, "orders", "orders/same", zombie, session=sessions[i % 8])
        rid = _refused(r)
        assert f"<RequestId>{rid}</RequestId>" in r.text, r.text
        return rid

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        flood = ex.map(one, range(IDENTICAL))
        time.sleep(0.2)
        during = _refused(_put(gw, bucket, "quiet", "quiet/k2", other))
        rids = list(flood)
    plain = [r for r in rids if "." not in r]
    assert len(plain) == 1, plain
    base = plain[0]
    assert sorted(rids) == sorted([base] + [f"{base}.{n}" for n in range(2, IDENTICAL + 1)])
    recs, kept, dropped = _audit(gw, "orders")
    assert len(recs) == 1 and (kept, dropped) == (1, 0), recs
    rec = recs[0]
    assert rec["request_id"] == base and rec["count"] == IDENTICAL, rec
    assert rec["last_ms"] >= rec["time_ms"]
    for rid in rids:
        found = _by_id(gw, rid)
        assert [(r["request_id"], r["count"], r["seq"]) for r in found] == \
            [(base, IDENTICAL, rec["seq"])], (rid, found)
    assert _by_id(gw, f"{base}.{IDENTICAL + 1}") == []
    assert _by_id(gw, f"{base}.1") == []
    for rid in (before, during):
        found = _by_id(gw, rid)
        assert [r["request_id"] for r in found] == [rid] and found[0]["count"] == 1
    recs, kept, dropped = _audit(gw, "quiet")
    assert [r["request_id"] for r in recs] == [before, during] and (kept, dropped) == (2, 0)
    # then distinct refusals past the quota: the newest's id is found at once,
    # and the run, the lock's first record, is kept with its ids
    _flood(gw, bucket, zombie, 2 * QUOTA)
    rid = _refused(_put(gw, bucket, "orders", "orders/last", zombie))
    assert [r["request_id"] for r in _by_id(gw, rid)] == [rid]
    recs, kept, dropped = _audit(gw, "orders")
    assert kept == QUOTA and dropped == 2 * QUOTA + 1 - (QUOTA - 1)
    assert recs[0]["request_id"] == base and recs[-1]["request_id"] == rid
    assert [r["count"] for r in _by_id(gw, f"{base}.{IDENTICAL}")] == [IDENTICAL]


def test_client_hanging_up_mid_page(gateway, rgw, tmp_path):
    """Clients that leave as soon as they asked for a page whose locks must be
    read: the gateway stays up (a sanitized one reports nothing) and the next
    pages are whole.  A smoke test: on loopback the reads mostly finish before
    the hang-up is seen, so it does not reliably reach the cancel path."""
    import socket

    gw = dir_gateway(gateway, tmp_path)
    seed(gw, "H", 20000)
    host, port = gw.host.rsplit(":", 1)
    for _ in range(20):
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(f"GET {API}/locks?limit=10000 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    got, pages = page_all(gw, "locks", limit=10000)
    assert len(got) == 20000 and len(pages) == 2
    assert gw.alive()


# ---- the audit under a flood spread over many locks: the per-principal quota ----

PQ = 50  # audit.max_records_per_principal
SPREAD = 600  # refusals in the flood, each lock refused at most twice (under the per-lock quota)
SPREAD_LOCKS = 300
# name -> (access key, secret key, extra principal keys)
PEOPLE = {
    "zombie": ("AKIAFGSCALEZOMBIE", "zombie-secret-0123456789abcdef", {}),
    "quiet": ("AKIAFGSCALEQUIET", "quiet-secret-0123456789abcdefg", {}),
    "ops": ("AKIAFGSCALEOPS", "ops-secret-0123456789abcdefghij", {"admin": True, "locks": []}),
}


def _signed(method, url, who, headers=None, data=b""):
    """A request signed as principal who by botocore's SigV4 signer."""
    import hashlib

    import botocore.auth
    import botocore.awsrequest
    import botocore.credentials

    ak, sk = PEOPLE[who][:2]
    req = botocore.awsrequest.AWSRequest(method=method, url=url, data=data,
                                         headers=dict(headers or {}))
    req.headers["X-Amz-Content-SHA256"] = hashlib.sha256(data).hexdigest()
    botocore.auth.S3SigV4Auth(botocore.credentials.Credentials(ak, sk), "s3",
                              "us-east-1").add_auth(req)
    p = req.prepare()
    return requests.request(method, p.url, data=data, headers=dict(p.headers), timeout=30)


def _not_granted(gw, bucket, who, lock):
    """A write with a token no epoch of lock was ever granted: 409, audited.
    who None: unsigned (an unauthenticated client, counted by its address)."""
    url = f"{gw.url}/{bucket}/spread/{lock}/{next(_KEYS)}"  # distinct: never coalesced
    h = {"X-Fencing-Token": "999", "X-Fencing-Lock": lock}
    if who is None:
        r = requests.put(url, data=b"zombie", headers=h, timeout=30)
    else:
        r = _signed("PUT", url, who, h, b"zombie")
    assert r.status_code == 409 and "<Code>FencingTokenNotGranted</Code>" in r.text, r.text
    rid = r.headers.get("x-amz-request-id")
    assert rid, r.headers
    return rid


def _spread_flood(gw, bucket, who, n, locks, threads=8):
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        return list(ex.map(lambda i: _not_granted(gw, bucket, who, f"s{i % locks:04d}"), range(n)))


def _audit_of(gw, asker, **params):
    """Every record of one query (paged) and the answer's last page."""
    recs, after = [], None
    while True:
        q = dict(params, limit=1000)
        if after:
            q["after"] = after
        url = f"{gw.url}{API}/audit?" + "&".join(f"{k}={v}" for k, v in q.items())
        r = _signed("GET", url, asker) if asker else requests.get(url, timeout=30)
        assert r.status_code == 200, r.text
        j = r.json()
        recs.extend(j["records"])
        after = j["next"]
        if not after:
            return recs, j


def principal_gateway(gateway, tmp_path, people=True):
    extra = {"audit": {"max_records": MAX_RECORDS, "max_records_per_lock": QUOTA,
                       "max_records_per_principal": PQ}}
    if people:
        extra["principals"] = [dict(name=n, access_key=ak, secret_key=sk, **x)
                               for n, (ak, sk, x) in PEOPLE.items()]
    return dir_gateway(gateway, tmp_path, extra=extra)


def test_spread_flood_leaves_other_principals_records(gateway, rgw, bucket, tmp_path):
    """One principal refused 600 times over 300 locks (no lock past its own
    quota), in a log of at most 200 records: the other principal's records
    from before and during the flood stay findable by their request ids;
    the flood keeps its first and newest records and counts the rest."""
    gw = principal_gateway(gateway, tmp_path)
    before = _not_granted(gw, bucket, "quiet", "calm")
    first = _not_granted(gw, bucket, "zombie", "s0000")
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        flood = ex.submit(_spread_flood, gw, bucket, "zombie", SPREAD - 1, SPREAD_LOCKS)
        time.sleep(0.2)
        during = _not_granted(gw, bucket, "quiet", "calm")
        rids = flood.result()
    assert not flood.exception()
    recs, j = _audit_of(gw, "quiet", principal="quiet")
    assert [r["request_id"] for r in recs] == [before, during], recs
    assert (j["principal_kept"], j["principal_dropped"]) == (2, 0)
    recs, j = _audit_of(gw, "ops", lock="calm")
    assert [r["request_id"] for r in recs] == [before, during]
    recs, j = _audit_of(gw, "ops", principal="zombie")
    assert len(recs) == j["principal_kept"] == PQ, len(recs)
    assert j["principal_kept"] + j["principal_dropped"] == SPREAD
    assert recs[0]["request_id"] == first
    assert recs[-1]["request_id"] in rids
    # a principal reads its own records and counts only
    r = _signed("GET", f"{gw.url}{API}/audit?principal=zombie", "quiet")
    assert r.status_code == 403, r.text
    r = _signed("GET", f"{gw.url}{API}/audit?principal=quiet&lock=calm", "ops")
    assert r.status_code == 400, r.text


def test_principal_quota_refusal_answers_409_with_findable_id(gateway, rgw, bucket, tmp_path):
    """Past its principal's quota, a refusal (each on a new lock) is still
    answered 409 only once its record committed (G7): the audit API finds
    its request id at once, by principal and by lock."""
    gw = principal_gateway(gateway, tmp_path)
    first = _not_granted(gw, bucket, "zombie", "s0000")
    _spread_flood(gw, bucket, "zombie", 3 * PQ, 3 * PQ)
    for i in range(5):
        lock = f"new{i}"
        rid = _not_granted(gw, bucket, "zombie", lock)
        recs, j = _audit_of(gw, "zombie", principal="zombie")  # no wait: committed before the 409
        ids = [r["request_id"] for r in recs]
        assert ids[-1] == rid and ids[0] == first, (rid, ids[:2], ids[-3:])
        assert j["principal_kept"] == PQ and j["principal_dropped"] > 0
        recs, _ = _audit_of(gw, "zombie", lock=lock)
        assert [r["request_id"] for r in recs] == [rid]


def test_unauthenticated_flood_counted_by_address(gateway, rgw, bucket, tmp_path):
    """Without principals, a client is counted by its address: loopback's
    flood over many locks keeps PQ records under "@127.0.0.1"."""
    gw = principal_gateway(gateway, tmp_path, people=False)
    first = _not_granted(gw, bucket, None, "s0000")
    _spread_flood(gw, bucket, None, 2 * PQ, 2 * PQ)
    recs, j = _audit_of(gw, None, principal="@127.0.0.1")
    assert len(recs) == j["principal_kept"] == PQ
    assert j["principal_kept"] + j["principal_dropped"] == 2 * PQ + 1
    assert recs[0]["request_id"] == first
