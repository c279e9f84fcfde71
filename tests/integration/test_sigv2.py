"""Inbound SigV2 (auth.sigv2): the header form and presigned URLs that boto3,
s3cmd and the aws cli make, through the gateway to RGW (which the gateway
re-signs for with SigV4).  Refusals are checked at RGW too: nothing stored."""

import os
import time

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
import requests
from botocore.exceptions import ClientError

from clients_record import record
from test_auth import AK, SK, error_code, rgw_keys, signed
from test_windows import LOCK, fence_rule, wait_ready

MiB = 1024 * 1024


def worker_gateway(gateway, tmp_path, bucket, sigv2=True):
    """A gateway with the principal `worker` (AK/SK), the dir election and a
    fence rule on bucket (also used by the JS and rclone client tests)."""
    gw = gateway({"principals": [{"name": "worker", "access_key": AK, "secret_key": SK}],
                  "auth": {"sigv2": sigv2},
                  "election": {"backend": "dir", "path": str(tmp_path / "locks"),
                               "min_lease_ms": 200},
                  "fences": fence_rule(bucket)})
    wait_ready(gw)
    return gw


@pytest.fixture
def v2gw(gateway, tmp_path, bucket):
    return worker_gateway(gateway, tmp_path, bucket)


def v2_client(gw, sk=SK):
    return gw.client(AK, sk, signature_version="s3")


def acquire(gw, holder="w1", lease_ms=30000):
    """POST acquire, signed with SigV4 by botocore (the gateway has principals)."""
    url = f"{gw.url}/_fencegate/v1/locks/{LOCK}/acquire"
    body = ('{"holder": "%s", "lease_ms": %d}' % (holder, lease_ms)).encode()
    p = signed("POST", url, body, headers={"Content-Type": "application/json"})
    r = requests.post(url, data=body, headers=dict(p.headers), timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def query_signed(method, url, expires, sk=SK, headers=None):
    """A SigV2 presigned URL made by botocore's HmacV1QueryAuth (expires: seconds from now)."""
    req = botocore.awsrequest.AWSRequest(method=method, url=url, headers=headers or {})
    botocore.auth.HmacV1QueryAuth(botocore.credentials.Credentials(AK, sk), expires).add_auth(req)
    return req.url


def test_boto3_header_form_object_ops(v2gw, rgw, bucket):
    c = v2_client(v2gw)
    seen = []
    c.meta.events.register("before-send.s3", lambda request, **kw: seen.append(
        request.headers.get("Authorization", b"")))
    body = os.urandom(300 * 1024)
    c.put_object(Bucket=bucket, Key="v2/a b+c", Body=body, Metadata={"who": "boto3"})
    assert all(bytes(a).startswith(b"AWS ") for a in seen), seen  # really SigV2
    got = c.get_object(Bucket=bucket, Key="v2/a b+c", Range="bytes=10-19")
    assert got["Body"].read() == body[10:20]
    assert rgw.client().head_object(Bucket=bucket, Key="v2/a b+c")["Metadata"]["who"] == "boto3"
    c.copy_object(Bucket=bucket, Key="v2/copy", CopySource={"Bucket": bucket, "Key": "v2/a b+c"})
    for i in range(3):
        c.put_object(Bucket=bucket, Key=f"v2/list/{i}", Body=b"x")
    page = c.list_objects_v2(Bucket=bucket, Prefix="v2/list/", MaxKeys=2)
    page2 = c.list_objects_v2(Bucket=bucket, Prefix="v2/list/",
                              ContinuationToken=page["NextContinuationToken"])
    assert [o["Key"] for o in page["Contents"] + page2["Contents"]] == \
        [f"v2/list/{i}" for i in range(3)]
    # multipart: uploads, uploadId and partNumber are sub-resources
    up = c.create_multipart_upload(Bucket=bucket, Key="v2/mp")["UploadId"]
    p1 = os.urandom(5 * MiB)
    e1 = c.upload_part(Bucket=bucket, Key="v2/mp", UploadId=up, PartNumber=1, Body=p1)["ETag"]
    e2 = c.upload_part(Bucket=bucket, Key="v2/mp", UploadId=up, PartNumber=2, Body=b"t")["ETag"]
    c.complete_multipart_upload(Bucket=bucket, Key="v2/mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert rgw.client().get_object(Bucket=bucket, Key="v2/mp")["Body"].read() == p1 + b"t"
    # DeleteObjects: the delete sub-resource, Content-MD5 signed
    r = c.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": f"v2/list/{i}"}
                                                            for i in range(3)]})
    assert len(r["Deleted"]) == 3
    assert rgw_keys(rgw, bucket, "v2/list/") == []
    record("boto3 (SigV2)", "PUT, ranged GET, COPY, LIST v2 with continuation, multipart, "
           "DeleteObjects")


def test_presigned_get_put(v2gw, rgw, bucket):
    c = v2_client(v2gw)
    rgw.client().put_object(Bucket=bucket, Key="v2/pre", Body=b"presigned v2")
    url = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "v2/pre"},
                                   ExpiresIn=300)
    assert "AWSAccessKeyId=" in url and "Signature=" in url and "Expires=" in url, url
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"presigned v2", r.text
    # a response-* override is a sub-resource: signed, and honoured upstream
    url = c.generate_presigned_url("get_object", Params={
        "Bucket": bucket, "Key": "v2/pre", "ResponseContentType": "text/x-fence"}, ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"] == "text/x-fence", r.text
    url = c.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "v2/pre-put"},
                                   ExpiresIn=300)
    r = requests.put(url, data=b"via v2 put", timeout=10)
    assert r.status_code == 200, r.text
    assert rgw.client().get_object(Bucket=bucket, Key="v2/pre-put")["Body"].read() == b"via v2 put"
    # boto3's default presigner (us-east-1, no signature_version): whatever it makes works
    url = v2gw.client(AK, SK, signature_version=None).generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "v2/pre"}, ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"presigned v2", (url, r.text)
    record("boto3 generate_presigned_url (SigV2)",
           "presigned GET (with response-content-type) and PUT")


def test_expired_and_wrong_secret_refused(v2gw, rgw, bucket):
    gw = v2gw
    rgw.client().put_object(Bucket=bucket, Key="v2/exp", Body=b"x")
    url = query_signed("GET", f"{gw.url}/{bucket}/v2/exp", -5)
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and error_code(r) == "AccessDenied", r.text
    assert "Request has expired" in r.text
    url = query_signed("PUT", f"{gw.url}/{bucket}/v2/bad", 300, sk="not-the-secret")
    r = requests.put(url, data=b"x", timeout=10)
    assert r.status_code == 403 and error_code(r) == "SignatureDoesNotMatch", r.text
    # tampered: a presigned GET reused for another key
    url = query_signed("GET", f"{gw.url}/{bucket}/v2/exp", 300)
    r = requests.get(url.replace("/v2/exp?", "/v2/other?"), timeout=10)
    assert r.status_code == 403 and error_code(r) == "SignatureDoesNotMatch", r.text
    with pytest.raises(ClientError) as e:
        v2_client(gw, "not-the-secret").put_object(Bucket=bucket, Key="v2/bad", Body=b"x")
    assert e.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    # incomplete query credentials are not anonymous access
    r = requests.get(f"{gw.url}/{bucket}/v2/exp?AWSAccessKeyId={AK}&Expires=9999999999",
                     timeout=10)
    assert r.status_code == 403 and "Signature, Expires and AWSAccessKeyId" in r.text, r.text
    assert rgw_keys(rgw, bucket, "v2/bad") == []


def test_sigv2_signed_chunks_refused(v2gw, rgw, bucket):
    """SigV2 has no seed signature to check signed aws-chunked bodies with: refused
    before the signature is checked, and nothing reaches the upstream."""
    gw = v2gw
    for mode in ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                 "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"):
        hdrs = {"x-amz-content-sha256": mode, "x-amz-decoded-content-length": "1"}
        url = query_signed("PUT", f"{gw.url}/{bucket}/v2/chunks", 300, headers=hdrs)
        r = requests.put(url, data=b"1;chunk-signature=00\r\nx\r\n0;chunk-signature=00\r\n\r\n",
                         headers=hdrs, timeout=10)
        assert r.status_code == 400 and error_code(r) == "InvalidRequest", r.text
        assert "need SigV4" in r.text, r.text
    assert rgw_keys(rgw, bucket, "v2/chunks") == []


def test_sigv2_disabled(gateway, tmp_path, rgw, bucket):
    gw = worker_gateway(gateway, tmp_path, bucket, sigv2=False)
    with pytest.raises(ClientError) as e:
        v2_client(gw).put_object(Bucket=bucket, Key="v2/off", Body=b"x")
    assert e.value.response["Error"]["Code"] == "InvalidRequest"
    assert "SigV2 is disabled" in e.value.response["Error"]["Message"]
    r = requests.put(query_signed("PUT", f"{gw.url}/{bucket}/v2/off", 300), data=b"x", timeout=10)
    assert r.status_code == 400 and error_code(r) == "InvalidRequest", r.text
    assert "SigV2 is disabled" in r.text
    assert rgw_keys(rgw, bucket, "v2/off") == []
    gw.client(AK, SK).put_object(Bucket=bucket, Key="v2/on4", Body=b"SigV4 still works")


def test_fenced_writes_via_sigv2(v2gw, rgw, bucket):
    gw = v2gw
    stale = acquire(gw, "w0", 300)["token"]
    time.sleep(0.6)  # w0's lease runs out
    tok = acquire(gw)["token"]
    assert tok > stale
    c = v2_client(gw)
    hdr = {}

    def add_token(request, **kw):
        for k, v in hdr.items():
            request.headers[k] = v

    c.meta.events.register("before-sign.s3", add_token)
    hdr.update({"X-Fencing-Token": str(tok), "X-Fencing-Lock": LOCK})
    c.put_object(Bucket=bucket, Key="orders/v2hdr", Body=b"fenced v2")
    head = rgw.client().head_object(Bucket=bucket, Key="orders/v2hdr")
    assert head["Metadata"]["fencing-epoch"] == str(tok)
    # a stale token: 409 StaleFencingToken, nothing written
    hdr["X-Fencing-Token"] = str(stale)
    with pytest.raises(ClientError) as e:
        c.put_object(Bucket=bucket, Key="orders/v2stale", Body=b"zombie")
    assert e.value.response["Error"]["Code"] == "StaleFencingToken"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert rgw_keys(rgw, bucket, "orders/v2stale") == []
    # no token under the rule: 428
    hdr.clear()
    with pytest.raises(ClientError) as e:
        c.put_object(Bucket=bucket, Key="orders/v2none", Body=b"x")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 428
    # the token in signed metadata, on a presigned PUT too
    c.put_object(Bucket=bucket, Key="orders/v2meta", Body=b"meta",
                 Metadata={"fencing-token": str(tok), "fencing-lock": LOCK})
    # a presigned PUT carries the token as the (unsigned) X-Fencing-Token header
    url = c.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "orders/v2pre"},
                                   ExpiresIn=300)
    r = requests.put(url, data=b"presigned fenced", timeout=10,
                     headers={"X-Fencing-Token": str(tok), "X-Fencing-Lock": LOCK})
    assert r.status_code == 200, r.text
    assert rgw.client().get_object(Bucket=bucket, Key="orders/v2pre")["Body"].read() == \
        b"presigned fenced"
    url = c.generate_presigned_url("put_object", Params={
        "Bucket": bucket, "Key": "orders/v2pre-stale"}, ExpiresIn=300)
    r = requests.put(url, data=b"zombie", timeout=10,
                     headers={"X-Fencing-Token": str(stale), "X-Fencing-Lock": LOCK})
    assert r.status_code == 409 and error_code(r) == "StaleFencingToken", r.text
    assert rgw_keys(rgw, bucket, "orders/v2pre-stale") == []
    record("boto3 (SigV2)", "fenced PUT, stale token 409, no token 428",
           "X-Fencing-Token header (before-sign hook)")
    record("boto3 (SigV2)", "fenced PUT with metadata", "Metadata={\"fencing-token\": N}")
    record("boto3 generate_presigned_url (SigV2)", "fenced presigned PUT, stale token 409",
           "X-Fencing-Token header sent with the URL (unsigned)")


def test_s3cmd_sigv2_and_signurl(v2gw, rgw, bucket, tmp_path):
    gw = v2gw
    src = tmp_path / "s.bin"
    src.write_bytes(b"s3cmd v2 body")
    kw = dict(access_key=AK, secret_key=SK, extra_config="signature_v2 = True\n")
    r = gw.s3cmd(["put", str(src), f"s3://{bucket}/v2/s3cmd"], **kw)
    assert r.returncode == 0, r.stderr
    r = gw.s3cmd(["ls", f"s3://{bucket}/v2/"], **kw)
    assert r.returncode == 0 and "v2/s3cmd" in r.stdout, r.stderr
    out = tmp_path / "got.bin"
    r = gw.s3cmd(["get", f"s3://{bucket}/v2/s3cmd", str(out)], **kw)
    assert r.returncode == 0 and out.read_bytes() == b"s3cmd v2 body", r.stderr
    r = gw.s3cmd(["signurl", f"s3://{bucket}/v2/s3cmd", "+300"], **kw)
    assert r.returncode == 0, r.stderr
    url = r.stdout.strip()
    assert "AWSAccessKeyId=" in url, url
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"s3cmd v2 body", r.text
    r = gw.s3cmd(["del", f"s3://{bucket}/v2/s3cmd"], **kw)
    assert r.returncode == 0, r.stderr
    assert rgw_keys(rgw, bucket, "v2/s3cmd") == []
    record("s3cmd signature_v2 = True", "put, ls, get, del; signurl GET")


def test_aws_cli_presign(v2gw, rgw, bucket):
    gw = v2gw
    rgw.client().put_object(Bucket=bucket, Key="v2/cli", Body=b"cli presign")
    r = gw.aws(["s3", "presign", f"s3://{bucket}/v2/cli", "--expires-in", "300"],
               access_key=AK, secret_key=SK)
    assert r.returncode == 0, r.stderr
    url = r.stdout.strip()
    got = requests.get(url, timeout=10)
    assert got.status_code == 200 and got.content == b"cli presign", (url, got.text)
    form = "SigV2" if "AWSAccessKeyId=" in url else "SigV4"
    record(f"aws cli v2 presign ({form})", "presigned GET")
