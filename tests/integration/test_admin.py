"""Issue 25 items 1-3: roles (a principal's reads bounded like its writes,
"admin": true sees everything), revoking a lease (POST .../revoke,
`fencegate lock revoke`) and the admin listener (admin_listen)."""

import hashlib
import json
import os
import subprocess
import time

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
import requests
from botocore.exceptions import ClientError

from conftest import free_port, gateway_bin, s3_client

REGION = "us-east-1"
# name -> (access key, secret key, extra principal keys)
PRINCIPALS = {
    "worker-a": ("AKIAFGWORKERA", "worker-a-secret-0123456789abcdef", {"locks": ["orders"]}),
    "worker-b": ("AKIAFGWORKERB", "worker-b-secret-0123456789abcdef", {"locks": ["billing"]}),
    "free": ("AKIAFGFREE", "free-secret-0123456789abcdefghij", {}),
    "ops": ("AKIAFGOPS", "ops-secret-0123456789abcdefghijk", {"admin": True, "locks": []}),
}


def principals_config():
    out = []
    for name, (ak, sk, extra) in PRINCIPALS.items():
        out.append(dict(name=name, access_key=ak, secret_key=sk, **extra))
    return out


def keys(name):
    return PRINCIPALS[name][0], PRINCIPALS[name][1]


def signed(method, url, who, body=None, timeout=30):
    """The JSON API called as principal `who`, signed by botocore's SigV4 signer."""
    ak, sk = keys(who)
    data = json.dumps(body).encode() if body is not None else b""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    req = botocore.awsrequest.AWSRequest(method=method, url=url, data=data, headers=headers)
    req.headers["X-Amz-Content-SHA256"] = hashlib.sha256(data).hexdigest()
    botocore.auth.S3SigV4Auth(botocore.credentials.Credentials(ak, sk), "s3", REGION).add_auth(req)
    p = req.prepare()
    return requests.request(method, p.url, data=data, headers=dict(p.headers), timeout=timeout)


def signed_hangup(url, who, body=b"{}"):
    """POST url signed as who, then hang up at once, without reading the answer."""
    import socket
    import urllib.parse
    ak, sk = keys(who)
    req = botocore.awsrequest.AWSRequest(method="POST", url=url, data=body,
                                         headers={"Content-Type": "application/json"})
    req.headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
    botocore.auth.S3SigV4Auth(botocore.credentials.Credentials(ak, sk), "s3", REGION).add_auth(req)
    u = urllib.parse.urlsplit(url)
    head = f"POST {u.path} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Length: {len(body)}\r\n"
    for k, v in req.headers.items():
        if k.lower() not in ("host", "content-length"):
            head += f"{k}: {v}\r\n"
    with socket.create_connection((u.hostname, u.port)) as sock:
        sock.sendall(head.encode() + b"\r\n" + body)
        sock.shutdown(socket.SHUT_RDWR)


def api(gw, who, path, body=None, method=None):
    url = f"{gw.url}/_fencegate/v1/{path}"
    return signed(method or ("POST" if body is not None else "GET"), url, who, body)


def client_as(gw, who, token=None, lock=None):
    ak, sk = keys(who)
    c = s3_client(gw.url, ak, sk)
    if token is not None:
        def add(request, **kwargs):
            request.headers["X-Fencing-Token"] = str(token)
            request.headers["X-Fencing-Lock"] = lock
        c.meta.events.register("before-sign.s3.*", add)
    return c


def wait_ready(url, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        try:
            r = requests.get(f"{url}/readyz", timeout=5)
            if r.status_code == 200:
                return
        except requests.RequestException:
            pass
        assert time.monotonic() < deadline, f"{url}/readyz never 200"
        time.sleep(0.05)


def fences_for(bucket):
    return [{"bucket": bucket, "prefix": "orders/", "lock": "orders", "require_token": True},
            {"bucket": bucket, "prefix": "billing/", "lock": "billing", "require_token": True}]


@pytest.fixture
def rolegw(gateway, bucket, tmp_path):
    gw = gateway({"principals": principals_config(),
                  "election": {"backend": "dir", "path": str(tmp_path / "locks"),
                               "min_lease_ms": 200},
                  "fences": fences_for(bucket)})
    wait_ready(gw.url)
    return gw


def acquire(gw, who, lock, holder=None, **kw):
    r = api(gw, who, f"locks/{lock}/acquire", dict(holder=holder or who, **kw))
    assert r.status_code == 200, r.text
    return r.json()


# ------------------------------------------------------------------ roles --

def test_roles_bound_reads(rolegw, rgw, bucket):
    """worker-a (locks: orders) sees only orders: the lock list, the lock
    itself (billing answers 403), the fences and the audit log; "free" (no
    locks list) and "ops" (admin) see both."""
    gw = rolegw
    a = acquire(gw, "worker-a", "orders")
    b = acquire(gw, "worker-b", "billing")
    client_as(gw, "worker-a", a["token"], "orders").put_object(
        Bucket=bucket, Key="orders/1", Body=b"a")
    client_as(gw, "worker-b", b["token"], "billing").put_object(
        Bucket=bucket, Key="billing/1", Body=b"b")
    # one refusal each, audited under its lock
    for who, lock, key in (("worker-a", "orders", "orders/2"), ("worker-b", "billing", "billing/2")):
        with pytest.raises(ClientError):
            client_as(gw, who, 99, lock).put_object(Bucket=bucket, Key=key, Body=b"x")

    def locks(who):
        r = api(gw, who, "locks")
        assert r.status_code == 200, r.text
        return sorted(x["lock"] for x in r.json()["locks"])

    def fences(who):
        r = api(gw, who, "fences")
        assert r.status_code == 200, r.text
        return sorted(x["lock"] for x in r.json()["fences"])

    def audit(who, **params):
        q = "&".join(f"{k}={v}" for k, v in params.items())
        r = api(gw, who, "audit" + ("?" + q if q else ""))
        assert r.status_code == 200, r.text
        return sorted({x["lock"] for x in r.json()["records"]})

    assert locks("worker-a") == ["orders"]
    assert locks("worker-b") == ["billing"]
    assert locks("free") == ["billing", "orders"]
    assert locks("ops") == ["billing", "orders"]
    assert fences("worker-a") == ["orders"]
    assert fences("worker-b") == ["billing"]
    assert fences("ops") == ["billing", "orders"]
    assert audit("worker-a") == ["orders"]
    assert audit("worker-b") == ["billing"]
    assert audit("free") == ["billing", "orders"]
    assert audit("ops") == ["billing", "orders"]
    # a page of one record is filled past the records it may not see
    assert audit("worker-b", limit=1) == ["billing"]

    # a single lock it may not use: 403, its own: 200; an admin: both
    r = api(gw, "worker-a", "locks/billing")
    assert r.status_code == 403 and r.json()["error"] == "denied"
    assert api(gw, "worker-a", "locks/orders").status_code == 200
    assert api(gw, "ops", "locks/billing").json()["holder"] == "worker-b"
    r = api(gw, "worker-a", "audit?lock=billing")
    assert r.status_code == 403
    # seeing is not holding: the admin may not acquire outside its own locks
    r = api(gw, "ops", "locks/orders/acquire", {"holder": "ops"})
    assert r.status_code == 403


# ----------------------------------------------------------------- revoke --

def put_as(gw, who, token, bucket, key, body, lock="orders"):
    """A fenced put; None when it passed, else the S3 error code."""
    try:
        client_as(gw, who, token, lock).put_object(Bucket=bucket, Key=key, Body=body)
        return None
    except ClientError as e:
        return e.response["Error"]["Code"]


def lock_cli(gw, who, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    if who is not None:
        ak, sk = keys(who)
        env.update(AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk)
    return subprocess.run([gateway_bin(), "lock", *args, "--gateway", gw.url],
                          capture_output=True, text=True, timeout=60, env=env)


def test_revoke_single_gateway(rolegw, rgw, bucket):
    """An admin revokes worker-a's lease: the revoked token is refused at once
    with 409 FencingLeaseExpired (audited), nothing reaches RGW, its renew fails
    (409 superseded with its own token: the worker libraries' `expired`), the revoke is audited
    with the admin and the holder, and the next acquire is granted at once with
    a higher token (dir backend, one gateway)."""
    gw = rolegw
    a = acquire(gw, "worker-a", "orders", lease_ms=60000)
    assert put_as(gw, "worker-a", a["token"], bucket, "orders/x", b"before") is None

    # only an admin may revoke
    for who in ("worker-a", "worker-b", "free"):
        r = api(gw, who, "locks/orders/revoke", {})
        assert r.status_code == 403 and r.json()["error"] == "denied", (who, r.text)
    assert api(gw, "ops", "locks/nosuch/revoke", {}).status_code == 404
    assert api(gw, "ops", "locks/orders/revoke", {"why": 1}).status_code == 400

    r = api(gw, "ops", "locks/orders/revoke", {})
    assert r.status_code == 200, r.text
    rv = r.json()
    assert (rv["token"], rv["holder"], rv["released"], rv["live"]) == \
        (a["token"], "worker-a", True, False)
    assert "lease_id" not in rv

    # refused here at once, audited, nothing written
    assert put_as(gw, "worker-a", a["token"], bucket, "orders/x", b"zombie") == \
        "FencingLeaseExpired"
    assert rgw.client().get_object(Bucket=bucket, Key="orders/x")["Body"].read() == b"before"
    # the holder's renew fails
    r = api(gw, "worker-a", "locks/orders/renew", {"token": a["token"], "lease_id": a["lease_id"]})
    assert r.status_code == 409 and r.json()["error"] == "superseded", r.text
    # the next acquire: at once, a higher token
    t0 = time.monotonic()
    b = acquire(gw, "worker-a", "orders", holder="worker-a2")
    assert time.monotonic() - t0 < 1.0
    assert b["token"] == a["token"] + 1
    assert put_as(gw, "worker-a", b["token"], bucket, "orders/x", b"after") is None

    recs = api(gw, "ops", "audit?lock=orders").json()["records"]
    kinds = [(x["kind"], x["token"]) for x in recs]
    assert kinds == [("revoked", a["token"]), ("lease_expired", a["token"])], recs
    rv = recs[0]
    assert (rv["principal"], rv["holder"], rv["operation"]) == ("ops", "worker-a", "RevokeLease")
    # the worker sees the revoke of its own lock
    assert [x["kind"] for x in api(gw, "worker-a", "audit").json()["records"]][:1] == ["revoked"]

    # fencegate audit (offline, read-only) shows it too
    out = subprocess.run([gateway_bin(), "audit", "--data-dir", str(gw.data_dir)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "revoked" in out.stdout and "holder worker-a" in out.stdout, out.stdout

    # fencegate lock revoke, signed: an admin may, a worker may not (exit 3)
    p = lock_cli(gw, "worker-a", "revoke", "orders")
    assert p.returncode == 3 and "403" in p.stderr, (p.returncode, p.stderr)
    p = lock_cli(gw, "ops", "revoke", "orders")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["token"] == b["token"]
    assert json.loads(p.stdout)["released"] is True
    assert put_as(gw, "worker-a", b["token"], bucket, "orders/x", b"zombie 2") == \
        "FencingLeaseExpired"
    p = lock_cli(gw, None, "revoke", "orders")  # unsigned, with principals: refused
    assert p.returncode != 0


def test_revoke_shared_s3(gateway, rgw, bucket):
    """s3 backend, shared by two gateways.  A revoke at A refuses the token at A
    at once, and the next acquire is granted after the hand-over
    (shared_window_ms + commit_margin_ms = 1.1 s), long before the 60 s lease
    would have run out.  B learns a revoke through its write window (capped at
    shared_window_ms since its last read): past that bound B refuses the token
    too, with no newer epoch granted."""
    locks = bucket + "-locks"
    rgw.client().create_bucket(Bucket=locks)
    election = {"backend": "s3", "bucket": locks, "prefix": "fencegate/", "shared": True,
                "min_lease_ms": 3150, "shared_window_ms": 1000}
    cfg = {"principals": principals_config(), "election": election,
           "fences": fences_for(bucket)}
    ga = gateway(dict(cfg, gateway_id="gw-a"))
    gb = gateway(dict(cfg, gateway_id="gw-b"))
    wait_ready(ga.url)
    wait_ready(gb.url)

    # 1. at A: refused at once, the next holder after the hand-over
    a = acquire(ga, "worker-a", "orders", lease_ms=60000)
    assert put_as(ga, "worker-a", a["token"], bucket, "orders/y", b"before") is None
    t0 = time.monotonic()  # before the revoke: the hand-over starts no earlier
    r = api(ga, "ops", "locks/orders/revoke", {})
    assert r.status_code == 200, r.text
    assert put_as(ga, "worker-a", a["token"], bucket, "orders/y", b"zombie") == \
        "FencingLeaseExpired"
    b = acquire(ga, "free", "orders", holder="next", wait_ms=20000)
    waited = time.monotonic() - t0
    assert b["token"] == a["token"] + 1
    # never before shared_window_ms + commit_margin_ms (1.1 s; 0.1 s of slack for
    # the timers' rounding), and not much later
    assert 1.0 <= waited < 5.0, waited
    r = api(ga, "worker-a", "locks/orders/renew", {"token": a["token"], "lease_id": a["lease_id"]})
    assert r.status_code == 409, r.text

    # 2. B: writes of the new holder pass, then A revokes it; within
    # shared_window_ms B's window is over and B refuses the token itself
    assert put_as(gb, "free", b["token"], bucket, "orders/y", b"next") is None
    r = api(ga, "ops", "locks/orders/revoke", {})
    assert r.status_code == 200, r.text
    time.sleep(1.2)
    assert put_as(gb, "free", b["token"], bucket, "orders/y", b"zombie b") == \
        "FencingLeaseExpired"
    assert rgw.client().get_object(Bucket=bucket, Key="orders/y")["Body"].read() == b"next"
    recs = api(gb, "ops", "audit?lock=orders").json()["records"]
    assert [(x["kind"], x["token"]) for x in recs] == [("lease_expired", b["token"])]
    recs = api(ga, "ops", "audit?lock=orders").json()["records"]
    assert [x["kind"] for x in recs] == ["revoked", "lease_expired", "revoked"]

    # 3. an admin that hangs up right after sending its revoke: released implies
    # audited, never one without the other.  (The gateway may only see the
    # hang-up after answering, so this checks the invariant; it does not
    # force the hang-up into the middle of the revoke.)
    h = acquire(ga, "free", "hangup", lease_ms=60000)
    signed_hangup(f"{ga.url}/_fencegate/v1/locks/hangup/revoke", "ops")
    deadline = time.monotonic() + 10
    while api(ga, "ops", "locks/hangup").json()["live"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    deadline = time.monotonic() + 10
    while True:
        recs = api(ga, "ops", "audit?lock=hangup").json()["records"]
        if recs or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert [(x["kind"], x["token"], x["holder"]) for x in recs] == \
        [("revoked", h["token"], "free")]


# ----------------------------------------------------------- admin_listen --

def wait_healthz(url, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(f"{url}/healthz", timeout=2, verify=False).status_code == 200:
                return
        except requests.RequestException:
            pass
        assert time.monotonic() < deadline, f"{url}/healthz never 200"
        time.sleep(0.05)


@pytest.fixture
def admingw(gateway, bucket, tmp_path):
    aport = free_port()
    gw = gateway({"principals": principals_config(),
                  "admin_listen": [f"127.0.0.1:{aport}"],
                  "election": {"backend": "dir", "path": str(tmp_path / "locks"),
                               "min_lease_ms": 200},
                  "fences": fences_for(bucket)}, wait=False)
    gw.admin_url = f"http://127.0.0.1:{aport}"
    wait_healthz(gw.admin_url)
    wait_ready(gw.admin_url)
    return gw


def test_admin_listener_takes_operator_endpoints(admingw, rgw, bucket):
    """With admin_listen: /metrics, /healthz and /readyz are on the admin port,
    unauthenticated, and not on the S3 port, where a path-style bucket called
    `metrics` works; the status page only there (signed); revoke only on the admin port (signed, admins only); the
    JSON lock API stays on the S3 port."""
    gw = admingw
    for path in ("/metrics", "/healthz", "/readyz"):
        r = requests.get(gw.admin_url + path, timeout=10)
        assert r.status_code == 200, (path, r.text)
        # on the S3 port it is a bucket: unsigned with principals, refused by auth
        r = requests.get(gw.url + path, timeout=10)
        assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, (path, r.text)
    assert "fencegate_" in requests.get(gw.admin_url + "/metrics", timeout=10).text
    # the status page moves too: signed on the admin port, 404 on the S3 port
    r = signed("GET", gw.admin_url + "/_fencegate/", "ops")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html"), r.text
    r = requests.get(gw.url + "/_fencegate/", timeout=10)
    assert r.status_code == 404 and "admin listener" in r.text, r.text
    assert requests.head(gw.admin_url + "/healthz", timeout=10).status_code == 200
    # S3 is not served on the admin port
    r = requests.get(f"{gw.admin_url}/{bucket}/k", timeout=10)
    assert r.status_code == 404 and "admin listener" in r.text

    # a bucket called "metrics", made at RGW, used through the gateway's S3 port
    rc = rgw.client()
    created = False
    try:
        rc.create_bucket(Bucket="metrics")
        created = True
    except ClientError as e:
        assert e.response["Error"]["Code"] == "BucketAlreadyOwnedByYou", e
    key = f"fg-admin-{os.getpid()}-{time.monotonic_ns()}"
    try:
        c = client_as(gw, "free")
        c.put_object(Bucket="metrics", Key=key, Body=b"not prometheus")
        assert c.get_object(Bucket="metrics", Key=key)["Body"].read() == b"not prometheus"
        assert rc.get_object(Bucket="metrics", Key=key)["Body"].read() == b"not prometheus"
        keys_ = [o["Key"] for o in c.list_objects_v2(Bucket="metrics").get("Contents", [])]
        assert key in keys_
        # GET /metrics signed: the bucket listing, not the gateway's counters
        r = signed("GET", f"{gw.url}/metrics", "free")
        assert r.status_code == 200 and "ListBucketResult" in r.text, r.text
    finally:
        rc.delete_object(Bucket="metrics", Key=key)
        if created:
            rc.delete_bucket(Bucket="metrics")

    # the lock API stays on the S3 port; the admin API moved to the admin port
    a = acquire(gw, "worker-a", "orders", lease_ms=60000)
    r = api(gw, "ops", "locks/orders/revoke", {})
    assert r.status_code == 404 and "admin listener" in r.text, r.text
    gw_admin = type("G", (), {"url": gw.admin_url})
    r = api(gw_admin, "worker-a", "locks/orders/revoke", {})
    assert r.status_code == 403, r.text
    r = requests.post(f"{gw.admin_url}/_fencegate/v1/locks/orders/revoke", json={}, timeout=10)
    assert r.status_code == 403, r.text  # unsigned: the admin API authenticates
    p = lock_cli(gw_admin, "ops", "revoke", "orders")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["holder"] == "worker-a"
    assert put_as(gw, "worker-a", a["token"], bucket, "orders/z", b"zombie") == \
        "FencingLeaseExpired"
    # reads of the JSON API work on the admin port too, bounded by role
    assert [x["lock"] for x in api(gw_admin, "worker-b", "locks").json()["locks"]] == []
    assert [x["lock"] for x in api(gw_admin, "ops", "locks").json()["locks"]] == ["orders"]


def test_admin_listener_tls_and_no_admin_listen(gateway, rgw, tmp_path):
    """admin_listen in its TLS form; and without admin_listen the operator
    endpoints and revoke stay on the S3 port as before."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    aport = free_port()
    gw = gateway({"admin_listen": [{"address": f"127.0.0.1:{aport}", "tls_cert": str(cert),
                                    "tls_key": str(key)}]}, wait=False)
    import urllib3
    urllib3.disable_warnings()
    wait_healthz(f"https://127.0.0.1:{aport}")
    r = requests.get(f"https://127.0.0.1:{aport}/metrics", timeout=10, verify=str(cert))
    assert r.status_code == 200 and "fencegate_" in r.text
    # anonymous mode on loopback: /metrics on the S3 port is a bucket (RGW: no such bucket)
    r = requests.get(f"{gw.url}/metrics", timeout=10)
    assert "fencegate_" not in r.text

    plain = gateway({"election": {"backend": "dir", "path": str(tmp_path / "locks2"),
                                  "min_lease_ms": 200}})
    for path in ("/metrics", "/healthz", "/readyz"):
        assert requests.get(plain.url + path, timeout=10).status_code == 200, path
    a = requests.post(f"{plain.url}/_fencegate/v1/locks/l/acquire", json={"holder": "w"},
                      timeout=10).json()
    r = requests.post(f"{plain.url}/_fencegate/v1/locks/l/revoke", timeout=10)
    assert r.status_code == 200 and r.json()["token"] == a["token"], r.text  # anonymous: admin


def test_admin_listen_config_checked(tmp_path):
    """check-config refuses an admin_listen address that overlaps listen, naming the key."""
    base = {"listen": ["127.0.0.1:9100"], "data_dir": str(tmp_path / "d"),
            "upstream": {"endpoint": "http://127.0.0.1:7480", "access_key": "a",
                         "secret_key": "b"}}
    cases = [
        (["127.0.0.1:9100"], "admin_listen[0]: overlaps listen[0]"),
        (["127.0.0.1:9101", "0.0.0.0:9100"], "admin_listen[1]: overlaps listen[0]"),
        (["127.0.0.1:9101", {"address": "127.0.0.1:9101"}], "admin_listen[1]: overlaps admin_listen[0]"),
        ([], "admin_listen: expected a non-empty array"),
        (["10.1.2.3:9101"], "principals: none configured and admin_listen address 10.1.2.3:9101"),
        (["127.0.0.1:9101"], None),
    ]
    for admin, want in cases:
        p = tmp_path / "c.json"
        # allow_anonymous: the overlap check itself, not the anonymous rule, must refuse
        anon = {"allow_anonymous": True} if want is None or "overlaps" in want else {}
        p.write_text(json.dumps(dict(base, admin_listen=admin, **anon)))
        out = subprocess.run([gateway_bin(), "check-config", "-c", str(p)],
                             capture_output=True, text=True, timeout=30)
        if want is None:
            assert out.returncode == 0, out.stderr
        else:
            assert out.returncode != 0 and want in out.stderr + out.stdout, (admin, out.stderr)
