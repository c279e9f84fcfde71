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
