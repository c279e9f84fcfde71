"""Fail closed (DESIGN G9, issue 11): every request shape that went around the
fence against RGW, sent through the real gateway byte for byte; each must be
refused with its status and S3 code, audited as "refused", and leave the store
as it was (objects, multipart uploads, bucket policy, lifecycle, ACL, the
bucket list), checked with a client straight to RGW."""

import hashlib
import json
import socket
import time

import pytest
import requests
from botocore.exceptions import ClientError

LOCK = "orders"
S3NS = "http://s3.amazonaws.com/doc/2006-03-01/"
BOUNDARY = "fgboundary0123"


def raw(gw, method, target, headers=None, body=b""):
    """One request written as given (no client normalises it); (status, text)."""
    h = {"Host": gw.host, "Content-Length": str(len(body)), "Connection": "close"}
    h.update(headers or {})
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items())
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=15)
    try:
        s.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")


def code_of(text):
    return text.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in text else None


def form_body(key):
    """A browser POST form upload whose key field is key."""
    parts = [("key", key), ("Content-Type", "text/plain")]
    out = b""
    for name, value in parts:
        out += (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
                f"{value}\r\n").encode()
    out += (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.txt\""
            f"\r\nContent-Type: text/plain\r\n\r\nformdata\r\n--{BOUNDARY}--\r\n").encode()
    return out


def delete_body(keys, tag=("Delete", "Object", "Key"), ns=S3NS):
    d, o, k = tag
    xmlns = f' xmlns="{ns}"' if ns else ""
    objs = "".join(f"<{o}><{k}>{x}</{k}></{o}>" for x in keys)
    return f"<{d}{xmlns}>{objs}</{d}>".encode()


def md5_headers(body, extra=None):
    import base64
    h = {"Content-MD5": base64.b64encode(hashlib.md5(body).digest()).decode(),
         "Content-Type": "application/xml"}
    h.update(extra or {})
    return h


FORM = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
POLICY = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"AWS": ["*"]}, "Action": ["s3:GetObject"],
    "Resource": ["arn:aws:s3:::BUCKET/*"]}]}).encode()
LIFECYCLE = (f'<LifecycleConfiguration xmlns="{S3NS}"><Rule><ID>x</ID><Filter><Prefix>orders/'
             '</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>'
             '</Rule></LifecycleConfiguration>').encode()
ACL_HDR = {"x-amz-acl": "public-read"}
PREFIXED = (f'<Delete xmlns:s3="{S3NS}"><Object><Key>free/a</Key></Object><s3:Object><s3:Key>'
            'orders/a</s3:Key></s3:Object></Delete>').encode()

# (method, target ("B" is the bucket), headers, body, status, code)
CASES = [
    # browser POST form uploads: the key is a form field
    ("POST", "/B", FORM, form_body("orders/form-1"), 501, "NotImplemented"),
    ("POST", "/B/", FORM, form_body("orders/form-2"), 501, "NotImplemented"),
    ("POST", "/B/free/x", FORM, form_body("orders/form-3"), 501, "NotImplemented"),
    ("POST", "/B/orders/x?select", FORM, form_body("orders/form-4"), 501, "NotImplemented"),
    ("POST", "/B/orders/x?restore", FORM, form_body("orders/form-5"), 501, "NotImplemented"),
    ("POST", "/B", FORM, form_body("orders/${filename}"), 501, "NotImplemented"),
    ("POST", "/B", {}, b"", 501, "NotImplemented"),
    # DeleteObjects with other sub-resources or another spelling
    ("POST", "/B?delete&uploads", {}, delete_body(["orders/a"]), 400, "InvalidRequest"),
    ("POST", "/B?uploads&delete", {}, delete_body(["orders/a"]), 400, "InvalidRequest"),
    ("POST", "/B?delete&versions", {}, delete_body(["orders/a"]), 400, "InvalidRequest"),
    ("POST", "/B?delete%3D", {}, delete_body(["orders/a"]), 400, "InvalidArgument"),
    ("POST", "/B?delete%3Dx", {}, delete_body(["orders/a"]), 400, "InvalidArgument"),
    ("POST", "/B?Delete", {}, delete_body(["orders/a"]), 400, "InvalidArgument"),
    ("POST", "//?delete", {}, delete_body(["orders/a"]), 400, "InvalidURI"),
    # DeleteObjects documents the gateway would read otherwise than a lenient S3
    ("POST", "/B?delete", {"X-Fencing-Lock": "x"},
     delete_body(["orders/a"], ("delete", "object", "key")), 400, "MalformedXML"),
    ("POST", "/B?delete", {}, delete_body(["orders/a"], ("Delete", "object", "key")), 400,
     "MalformedXML"),
    ("POST", "/B?delete", {}, PREFIXED, 400, "MalformedXML"),
    # bucket-level writes with extra or foreign sub-resources
    ("PUT", "/B?policy&uploads", {}, POLICY, 400, "InvalidRequest"),
    ("PUT", "/B?lifecycle&uploads", {}, LIFECYCLE, 400, "InvalidRequest"),
    ("PUT", "/B?acl&uploads", ACL_HDR, b"", 400, "InvalidRequest"),
    ("PUT", "/fg-newbucket-g9?uploadId=1", {}, b"", 400, "InvalidRequest"),
    ("PUT", "/fg-newbucket-g9?retention", {}, b"", 400, "InvalidRequest"),
    ("DELETE", "/B?uploads", {}, b"", 400, "InvalidRequest"),
    ("POST", "/B?mdsearch", {}, b"", 400, "InvalidArgument"),
    ("POST", "/", {}, b"", 400, "InvalidRequest"),
    ("PUT", "/", {}, b"", 400, "InvalidRequest"),
    # bucket-level writes that name one operation: refused unless allowed
    ("PUT", "/B?policy", {}, POLICY, 403, "AccessDenied"),
    ("PUT", "/B?lifecycle", {}, LIFECYCLE, 403, "AccessDenied"),
    ("PUT", "/B?acl", ACL_HDR, b"", 403, "AccessDenied"),
    ("DELETE", "/B", {}, b"", 403, "AccessDenied"),
    ("PUT", "/fg-newbucket-g9", {}, b"", 403, "AccessDenied"),
    # methods and overrides
    ("COPY", "/B/free/a", {"Destination": "/B/orders/copied"}, b"", 405, "MethodNotAllowed"),
    ("MOVE", "/B/free/a", {"Destination": "/B/orders/moved"}, b"", 405, "MethodNotAllowed"),
    ("PUT", "/B/free/over", {"X-HTTP-Method-Override": "DELETE"}, b"x", 400, "InvalidRequest"),
    ("POST", "/B/orders/a", {"X-HTTP-Method-Override": "PUT"}, b"x", 400, "InvalidRequest"),
    ("GET", "/B/orders/a", {"X-Method-Override": "DELETE"}, b"", 400, "InvalidRequest"),
    # writes with parameters S3 does not define for them
    ("PUT", "/B/orders/a?foo=bar", {"X-Fencing-Token": "1"}, b"p", 400, "InvalidArgument"),
    ("PUT", "/B/orders/a?tagging&acl", {}, b"", 400, "InvalidRequest"),
]


def snapshot(rgw, bucket):
    """What a write could change: objects (with ETags), uploads, policy, lifecycle, ACL, buckets."""
    c = rgw.client()
    # The gateway's own start-up probes (conditional writes, checksum trailers)
    # write and delete "<prefix>~probe/..." objects and uploads in this bucket,
    # on their own schedule: they are not what a client's request changed.
    objs = sorted((o["Key"], o["ETag"]) for o in
                  c.list_objects_v2(Bucket=bucket).get("Contents", [])
                  if "~probe/" not in o["Key"])
    ups = sorted(u["Key"] for u in c.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
                 if "~probe/" not in u["Key"])

    def conf(fn, **kw):
        try:
            r = fn(Bucket=bucket, **kw)
            r.pop("ResponseMetadata", None)
            return json.dumps(r, sort_keys=True, default=str)
        except ClientError as e:
            return e.response["Error"]["Code"]

    return {"objects": objs, "uploads": ups, "policy": conf(c.get_bucket_policy),
            "lifecycle": conf(c.get_bucket_lifecycle_configuration),
            "acl": conf(c.get_bucket_acl),
            "buckets": sorted(b["Name"] for b in c.list_buckets()["Buckets"])}


def signed_get(url, ak, sk):
    """A SigV4-signed GET (botocore's signer), for a gateway with principals."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="GET", url=url, headers={"x-amz-content-sha256": hashlib.sha256(
        b"").hexdigest()})
    S3SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
    return requests.get(url, headers=dict(req.headers), timeout=10)


def wait_audit(gw, n, kind="refused", creds=None):
    """The audit records of kind, once they count n refusals (or after 10 s;
    identical refusals are counted in one record: its "count")."""
    deadline = time.monotonic() + 10
    recs = []
    url = f"{gw.url}/_fencegate/v1/audit?limit=1000"
    while time.monotonic() < deadline:
        r = signed_get(url, *creds) if creds else requests.get(url, timeout=10)
        assert r.status_code == 200, r.text
        recs = [x for x in r.json()["records"] if x.get("kind") == kind]
        if sum(x["count"] for x in recs) >= n:
            return recs
        time.sleep(0.2)
    return recs


@pytest.fixture
def fcgw(gateway, bucket, rgw):
    c = rgw.client()
    for k in ("orders/a", "orders/b", "free/a"):
        c.put_object(Bucket=bucket, Key=k, Body=b"seed " + k.encode())
    return gateway({"fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                                "require_token": True}]})


def test_abuse_requests_refused_and_store_unchanged(fcgw, rgw, bucket):
    gw = fcgw
    before = snapshot(rgw, bucket)
    failures = []
    for method, target, headers, body, status, code in CASES:
        target = target.replace("/B", f"/{bucket}", 1) if target.startswith("/B") else target
        body = body.replace(b"BUCKET", bucket.encode())
        hdrs = dict(headers)
        if target.split("?")[0] == f"/{bucket}" and "delete" in target.lower():
            hdrs = md5_headers(body, hdrs)
        got, text = raw(gw, method, target, hdrs, body)
        if got != status or code_of(text) != code:
            failures.append(f"{method} {target}: want {status} {code}, got {got} {code_of(text)}")
        after = snapshot(rgw, bucket)
        if after != before:
            failures.append(f"{method} {target}: changed the store: {before} -> {after}")
            before = after
    assert not failures, "\n".join(failures)
    # every refusal past the URI parser is audited as "refused", with its method
    refused = [r for r in wait_audit(gw, len(CASES) - 1)]
    methods = {r.get("method") for r in refused}
    # "//?delete" is refused by the URI parser; identical refusals share a record
    assert sum(r["count"] for r in refused) >= len(CASES) - 1, refused
    assert {"POST", "PUT", "DELETE", "COPY", "MOVE", "GET"} <= methods, methods
    m = requests.get(f"{gw.url}/metrics", timeout=10).text
    line = [x for x in m.splitlines() if x.startswith("fencegate_classify_refusals_total ")]
    assert line and int(line[0].split()[1]) >= len(CASES) - 1, line


def test_ordinary_clients_still_work(fcgw, rgw, bucket):
    """The strict rules refuse nothing boto3 sends for the usual calls."""
    c = fcgw.client()
    c.put_object(Bucket=bucket, Key="free/ok", Body=b"x")
    c.put_object_tagging(Bucket=bucket, Key="free/ok", Tagging={"TagSet": [{"Key": "a",
                                                                             "Value": "b"}]})
    assert c.get_object(Bucket=bucket, Key="free/ok")["Body"].read() == b"x"
    r = c.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "free/ok"}], "Quiet": False})
    assert [d["Key"] for d in r["Deleted"]] == ["free/ok"]
    up = c.create_multipart_upload(Bucket=bucket, Key="free/mp")["UploadId"]
    p = c.upload_part(Bucket=bucket, Key="free/mp", UploadId=up, PartNumber=1, Body=b"y")
    c.complete_multipart_upload(Bucket=bucket, Key="free/mp", UploadId=up,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    url = c.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "free/pre"})
    assert requests.put(url, data=b"z", timeout=10).status_code == 200
    # reads pass with parameters S3 ignores
    assert requests.get(f"{fcgw.url}/{bucket}?prefix=free/&mdsearch&Delete",
                        timeout=10).status_code == 200
    # CreateBucket of the bucket that exists is still answered as S3 does (bucket_probe)
    assert requests.put(f"{fcgw.url}/{bucket}", timeout=10).status_code == 200


AK = "AKIAFENCEGATEOTHER01"
SK = "other-secret-0123456789abcdefghij"


def test_principal_locks_bound_every_write(gateway, rgw, bucket):
    """A principal whose locks name only another lock writes nothing under a
    prefix fenced by a lock it does not hold: with no token, with a valid token
    of its own lock, in a DeleteObjects, with or without require_token."""
    rgw.client().put_object(Bucket=bucket, Key="orders/a", Body=b"seed")
    gw = gateway({"principals": [{"name": "other", "access_key": AK, "secret_key": SK,
                                  "locks": ["other"]}],
                  "fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                              "require_token": False},
                             {"bucket": bucket, "prefix": "other/", "lock": "other",
                              "require_token": False}],
                  "fencing": {"allow_unfenced_writes": False}})
    import subprocess
    import os
    seed = os.path.join(os.environ.get("FENCEGATE_BUILD", "build"), "tests/helpers/store_seed")
    r = subprocess.run([seed, str(gw.data_dir), "other", "1"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    before = snapshot(rgw, bucket)
    c = gw.client(access_key=AK, secret_key=SK)
    tok = {"X-Fencing-Token": "1", "X-Fencing-Lock": "other"}

    def with_headers(h):
        def add(request, **kw):
            for k, v in h.items():
                request.headers[k] = v
        return add

    for headers in ({}, tok):
        c2 = gw.client(access_key=AK, secret_key=SK)
        c2.meta.events.register("before-sign.s3.*", with_headers(headers))
        for call in (lambda: c2.put_object(Bucket=bucket, Key="orders/x", Body=b"x"),
                     lambda: c2.delete_object(Bucket=bucket, Key="orders/a"),
                     lambda: c2.delete_objects(Bucket=bucket,
                                               Delete={"Objects": [{"Key": "orders/a"}]})):
            with pytest.raises(ClientError) as e:
                call()
            assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403, \
                e.value.response
    assert snapshot(rgw, bucket) == before
    # its own lock's prefix still works with its token
    c.meta.events.register("before-sign.s3.*", with_headers(tok))
    c.put_object(Bucket=bucket, Key="other/x", Body=b"mine")
    assert rgw.client().get_object(Bucket=bucket, Key="other/x")["Body"].read() == b"mine"
    recs = wait_audit(gw, 1, creds=(AK, SK))
    assert any(r.get("lock") == LOCK and r.get("principal") == "other" for r in recs), recs
