"""The s3 election backend (gateway/s3client/elect_s3.c) against a real S3 (Ceph RGW).

Each test runs tests/helpers/elect_s3_driver (built by `make`) with a script
of backend operations and checks its JSON results, and what RGW really
stored, with boto3 straight to RGW.  No fake S3 anywhere: the point is to
pin down how the backend maps a real store's answers (RGW's quirks included:
PUT If-Match matches only the unquoted ETag; If-Match on a missing key is 412;
some losing conditional PUTs may get 500).

A store that ignores preconditions cannot be shown with RGW; the election
core has a unit-test double for that case.
"""

import collections
import datetime
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import REPO, read_env_file

OBJ_MAX = 8192  # ELECT_OBJ_MAX in election/backend.h
AMBIGUOUS = ("ERR_UPSTREAM", "ERR_TIMEOUT")


def driver_path():
    build = os.environ.get("FENCEGATE_BUILD") or str(REPO / "build")
    p = Path(build)
    if not p.is_absolute():
        p = REPO / p
    d = p / "tests" / "helpers" / "elect_s3_driver"
    if not os.access(d, os.X_OK):
        pytest.fail(f"{d} missing: run make (or set FENCEGATE_BUILD)")
    return str(d)


def run(rgw, bucket, script, endpoint=None, addressing="path", timeout=120):
    """Runs the driver over script (a list of command lines); returns its results."""
    env = dict(os.environ)
    env.update(
        FG_S3_ENDPOINT=endpoint or rgw.endpoint,
        FG_S3_ACCESS_KEY=rgw.access_key,
        FG_S3_SECRET_KEY=rgw.secret_key,
        FG_S3_BUCKET=bucket,
        FG_S3_ADDRESSING=addressing,
    )
    p = subprocess.run(
        [driver_path()],
        input="\n".join(script) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert p.returncode == 0, f"driver exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        assert marker not in p.stderr, p.stderr
    out = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    return out


def one(rgw, bucket, cmd, **kw):
    res = run(rgw, bucket, [cmd], **kw)
    assert len(res) == 1, res
    return res[0]


def head_etag(rgw, bucket, key):
    return rgw.client().head_object(Bucket=bucket, Key=key)["ETag"].strip('"')


def rgw_body(rgw, bucket, key):
    return rgw.client().get_object(Bucket=bucket, Key=key)["Body"].read()


def rgw_missing(rgw, bucket, key):
    try:
        rgw.client().head_object(Bucket=bucket, Key=key)
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    return False


# ---- create ----


def test_create_then_exists(rgw, bucket):
    r = run(rgw, bucket, ["create locks/a/epoch-1.json first", "create locks/a/epoch-1.json second"])
    assert r[0]["err"] == "OK", r
    assert r[0]["etag"] == head_etag(rgw, bucket, "locks/a/epoch-1.json")
    assert '"' not in r[0]["etag"]
    assert r[0]["date_ms"] > 0
    assert r[1]["err"] == "ERR_EXISTS", r
    assert "etag" not in r[1]
    assert rgw_body(rgw, bucket, "locks/a/epoch-1.json") == b"first"


# ---- replace: which ETag spelling RGW honours ----


def test_replace_etag_forms(rgw, bucket):
    key = "locks/b/epoch-1.json"
    c = one(rgw, bucket, f"create {key} v1")
    etag = c["etag"]
    assert etag == head_etag(rgw, bucket, key)

    # RGW's PUT If-Match compares the bare ETag only: the quoted form (AWS,
    # RFC 9110) is refused with 412 -> ERR_CONFLICT, and nothing changes.
    r = one(rgw, bucket, f"replace {key} {etag} quoted v2-quoted")
    assert r["err"] == "ERR_CONFLICT", r
    assert rgw_body(rgw, bucket, key) == b"v1"

    r = one(rgw, bucket, f"replace {key} {etag} unquoted v2")
    assert r["err"] == "OK", r
    assert r["etag"] != etag
    assert r["etag"] == head_etag(rgw, bucket, key)
    assert rgw_body(rgw, bucket, key) == b"v2"

    # The old ETag (superseded), a wrong one, in both spellings: ERR_CONFLICT.
    for tag, form in ((etag, "unquoted"), (etag, "quoted"), ("0123456789abcdef", "unquoted"),
                      ("0123456789abcdef", "quoted")):
        r = one(rgw, bucket, f"replace {key} {tag} {form} v3")
        assert r["err"] == "ERR_CONFLICT", (tag, form, r)
    assert rgw_body(rgw, bucket, key) == b"v2"


def test_replace_missing_key_is_conflict_on_rgw(rgw, bucket):
    # AWS answers If-Match on a missing key with 404 (ERR_NOTFOUND); RGW with
    # 412, so on RGW a missing key looks like ERR_CONFLICT.
    r = one(rgw, bucket, "replace locks/none/epoch-1.json abc unquoted x")
    assert r["err"] in ("ERR_CONFLICT", "ERR_NOTFOUND"), r
    assert r["err"] == "ERR_CONFLICT", "RGW changed: If-Match on a missing key is no longer 412"
    assert rgw_missing(rgw, bucket, "locks/none/epoch-1.json")


# ---- get ----


def test_get_meta(rgw, bucket):
    key = "locks/c/epoch-1.json"
    body = '{"epoch":1}'
    rgw.client().put_object(Bucket=bucket, Key=key, Body=body.encode())
    before = time.time()
    r = one(rgw, bucket, f"get {key}")
    after = time.time()
    assert r["err"] == "OK", r
    assert r["body"] == body
    h = rgw.client().head_object(Bucket=bucket, Key=key)
    assert r["etag"] == h["ETag"].strip('"')
    lm = int(h["LastModified"].timestamp() * 1000)
    assert r["last_modified_ms"] == lm
    # The store's clock (the same machine here): Date is at or after
    # Last-Modified and close to now (1 s resolution).
    assert r["date_ms"] >= r["last_modified_ms"]
    assert before - 2 <= r["date_ms"] / 1000 <= after + 2
    date_hdr = h["ResponseMetadata"]["HTTPHeaders"]["date"]
    hd = datetime.datetime.strptime(date_hdr, "%a, %d %b %Y %H:%M:%S GMT").replace(
        tzinfo=datetime.timezone.utc)
    assert abs(hd.timestamp() * 1000 - r["date_ms"]) <= 5000


def test_get_missing_empty_and_caps(rgw, bucket):
    c = rgw.client()
    c.put_object(Bucket=bucket, Key="g/empty", Body=b"")
    c.put_object(Bucket=bucket, Key="g/max", Body=b"m" * OBJ_MAX)
    c.put_object(Bucket=bucket, Key="g/over", Body=b"o" * (OBJ_MAX + 1))
    c.put_object(Bucket=bucket, Key="g/huge", Body=b"h" * (4 << 20))
    r = run(rgw, bucket, ["get g/none", "get g/empty", "get g/max", "get g/over", "get g/huge"])
    assert r[0]["err"] == "ERR_NOTFOUND"
    assert r[1]["err"] == "OK" and r[1]["body"] == ""
    assert r[1]["etag"] == head_etag(rgw, bucket, "g/empty")
    assert r[2]["err"] == "OK" and r[2]["body"] == "m" * OBJ_MAX
    assert r[3]["err"] == "ERR_TOOBIG", r[3]
    assert r[4]["err"] == "ERR_TOOBIG", r[4]


# ---- list ----


def test_list_pages_with_start_after(rgw, bucket):
    c = rgw.client()
    keys = [f"fg/orders/epoch-{e:020d}.json" for e in range(1, 31)]
    for k in keys:
        c.put_object(Bucket=bucket, Key=k, Body=b"x")
    # Neighbours that must not show up: other prefixes sorting before/after.
    for k in ("fg/order", "fg/orders", "fg/ordersX/epoch-1.json", "fg/orderr/x", "fh/x"):
        c.put_object(Bucket=bucket, Key=k, Body=b"n")

    got, after, pages = [], "-", []
    while True:
        r = one(rgw, bucket, f"list fg/orders/ {after} 7")
        assert r["err"] == "OK", r
        assert 0 < len(r["keys"]) <= 7 or not r["truncated"]
        pages.append((len(r["keys"]), r["truncated"]))
        got += r["keys"]
        if not r["truncated"]:
            break
        after = r["keys"][-1]
        assert len(pages) < 20, pages
    assert got == keys
    assert [n for n, _ in pages] == [7, 7, 7, 7, 2]
    assert [t for _, t in pages] == [True, True, True, True, False]

    # start-after need not exist; the latest epoch found cheaply.
    r = one(rgw, bucket, f"list fg/orders/ fg/orders/epoch-{27:020d}.jsonX 1000")
    assert r["keys"] == keys[27:] and r["truncated"] is False
    r = one(rgw, bucket, f"list fg/orders/ {keys[-1]} 1000")
    assert r["keys"] == [] and r["truncated"] is False
    r = one(rgw, bucket, "list nothing/ - 5")
    assert r["err"] == "OK" and r["keys"] == [] and r["truncated"] is False
    # The whole bucket, byte order.
    r = one(rgw, bucket, "list - - 1000")
    assert r["keys"] == sorted(r["keys"], key=lambda s: s.encode())
    assert len(r["keys"]) == 35


def test_list_odd_keys_roundtrip(rgw, bucket):
    # encoding-type=url: the backend decodes keys, so any key comes back exact.
    odd = ["odd/a b", "odd/a+b", "odd/a%2Fb", "odd/a&b<c>", "odd/\u00e9t\u00e9", "odd/q?x=1#f"]
    c = rgw.client()
    for k in odd:
        c.put_object(Bucket=bucket, Key=k, Body=b"o")
    r = one(rgw, bucket, "list odd/ - 100")
    assert r["err"] == "OK", r
    assert r["keys"] == sorted(odd, key=lambda s: s.encode())
    # And the odd keys work for get/delete too (encoded on the path).
    res = run(rgw, bucket, ["get odd/a+b", "del odd/a%2Fb", "get odd/a%2Fb"])
    assert res[0]["err"] == "OK" and res[0]["body"] == "o"
    assert res[1]["err"] == "OK"
    assert res[2]["err"] == "ERR_NOTFOUND"
    assert rgw_missing(rgw, bucket, "odd/a%2Fb")


# ---- delete ----


def test_delete(rgw, bucket):
    rgw.client().put_object(Bucket=bucket, Key="d/k", Body=b"x")
    r = run(rgw, bucket, ["del d/k", "del d/k", "get d/k"])
    assert [x["err"] for x in r] == ["OK", "OK", "ERR_NOTFOUND"]
    assert rgw_missing(rgw, bucket, "d/k")


# ---- contention ----


def test_concurrent_creates_one_winner(rgw, bucket):
    rounds, n = 8, 32
    script = [f"race {n} race/epoch-{i:020d}.json" for i in range(rounds)]
    res = run(rgw, bucket, script, timeout=300)
    assert len(res) == rounds * n
    outcomes = collections.Counter(r["err"] for r in res)
    for i in range(rounds):
        rs = res[i * n:(i + 1) * n]
        assert sorted(r["i"] for r in rs) == list(range(n))
        winners = [r for r in rs if r["err"] == "OK"]
        others = [r["err"] for r in rs if r["err"] != "OK"]
        # RGW sometimes answers a losing conditional PUT with 500 (ambiguous).
        assert all(e in ("ERR_EXISTS", "ERR_CONFLICT") + AMBIGUOUS for e in others), others
        key = f"race/epoch-{i:020d}.json"
        stored = rgw_body(rgw, bucket, key).decode()
        assert stored.startswith("race-")
        # Exactly one unambiguous winner, and it is the one stored; if every
        # success was ambiguous the stored body names the winner.
        assert len(winners) <= 1, winners
        if winners:
            assert stored == f"race-{winners[0]['i']}"
            assert winners[0]["etag"] == head_etag(rgw, bucket, key)
        else:
            assert any(e in AMBIGUOUS for e in others)
    print(f"\nRGW outcomes of {rounds}x{n} concurrent If-None-Match PUTs: {dict(outcomes)}")
    assert outcomes["OK"] >= rounds - 1


def test_concurrent_replaces_one_winner(rgw, bucket):
    # Renewals racing on one ETag: one wins; on RGW the losers get 412 or,
    # often, 500 UnknownError (ERR_UPSTREAM, ambiguous), never a second 200.
    rounds, n = 6, 32
    outcomes = collections.Counter()
    for i in range(rounds):
        key = f"rr/epoch-{i:020d}.json"
        etag = one(rgw, bucket, f"create {key} v0")["etag"]
        rs = run(rgw, bucket, [f"race_replace {n} {key} {etag} unquoted"], timeout=300)
        assert sorted(r["i"] for r in rs) == list(range(n))
        outcomes.update(r["err"] for r in rs)
        winners = [r for r in rs if r["err"] == "OK"]
        others = [r["err"] for r in rs if r["err"] != "OK"]
        assert all(e in ("ERR_CONFLICT",) + AMBIGUOUS for e in others), others
        assert len(winners) <= 1, winners
        stored = rgw_body(rgw, bucket, key).decode()
        if winners:
            assert stored == f"rr-{winners[0]['i']}"
            assert winners[0]["etag"] == head_etag(rgw, bucket, key)
        else:
            assert stored.startswith("rr-"), stored
    print(f"\nRGW outcomes of {rounds}x{n} concurrent If-Match PUTs: {dict(outcomes)}")


# ---- cancellation, errors ----


def test_free_cancels_without_callbacks(rgw, bucket):
    r = run(rgw, bucket, ["cancel cancel/k", "get cancel/k"])
    assert r[0]["op"] == "cancel" and r[0]["callbacks"] == 0, r
    # The PUT was cut before its last byte (here: before its first), so
    # nothing was committed.
    assert r[1]["err"] == "ERR_NOTFOUND"
    assert rgw_missing(rgw, bucket, "cancel/k")


def test_no_such_bucket(rgw, bucket):
    r = run(rgw, bucket, [f"bucket {bucket}-missing", "create k v", "replace k e unquoted v",
                          "get k", "list - - 5", "del k"])
    assert [x["err"] for x in r] == ["OK", "ERR_NOTFOUND", "ERR_CONFLICT", "ERR_NOTFOUND",
                                     "ERR_NOTFOUND", "OK"] or \
        [x["err"] for x in r] == ["OK", "ERR_NOTFOUND", "ERR_NOTFOUND", "ERR_NOTFOUND",
                                  "ERR_NOTFOUND", "OK"], r


def test_bad_credentials_denied(rgw, bucket):
    rgw.client().put_object(Bucket=bucket, Key="auth/k", Body=b"x")
    r = run(rgw, bucket, ["secret not-the-secret", "get auth/k", "create auth/new v",
                          "list - - 5", "del auth/k"])
    assert [x["err"] for x in r] == ["OK"] + ["ERR_DENIED"] * 4, r
    assert rgw_body(rgw, bucket, "auth/k") == b"x"
    assert rgw_missing(rgw, bucket, "auth/new")


def test_virtual_hosted_addressing(rgw, bucket):
    env = read_env_file(rgw.env_file)
    domain = env.get("RGW_VHOST_DOMAIN")
    if not domain:
        pytest.skip("this RGW has no virtual-host domain")
    ep = f"http://{domain}:{rgw.port}"
    r = run(rgw, bucket, ["create vh/k one", "get vh/k", "list vh/ - 5", "del vh/k", "get vh/k"],
            endpoint=ep, addressing="virtual")
    assert [x["err"] for x in r] == ["OK", "OK", "OK", "OK", "ERR_NOTFOUND"], r
    assert r[1]["body"] == "one"
    assert r[2]["keys"] == ["vh/k"]
