"""Inbound SigV4: real clients with the gateway's own principals, through the
gateway to RGW, which the gateway re-signs for with the upstream keys.  Every
refusal is checked at RGW too: nothing may be stored."""

import datetime
import hashlib
import hmac
import json
import os
import subprocess
import time
import zlib
import base64

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
import requests
from botocore.exceptions import ClientError

from clients_record import record
from conftest import gateway_bin

AK = "AKIAFENCEGATEWORKER"
SK = "worker-secret-0123456789abcdefghij"
AK2 = "AKIAFENCEGATEREADER"
SK2 = "reader-secret-9876543210zyxwvutsrq"
REGION = "us-east-1"


def principals(allowed_bucket=None):
    reader = {"name": "reader", "access_key": AK2, "secret_key_env": "FG_READER_SECRET"}
    if allowed_bucket:
        reader["buckets"] = [allowed_bucket]
    return {"principals": [{"name": "worker", "access_key": AK, "secret_key": SK}, reader]}


@pytest.fixture
def authgw(gateway, bucket):
    return gateway(principals("only-this-bucket"), env={"FG_READER_SECRET": SK2})


def rgw_keys(rgw, bucket, prefix=""):
    r = rgw.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for o in r.get("Contents", [])]


def error_code(resp):
    t = resp.text
    return t.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in t else None


class _FixedPayloadAuth(botocore.auth.S3SigV4Auth):
    """botocore's signer, told which x-amz-content-sha256 to sign (it would hash the body)."""

    def __init__(self, creds, payload_hash):
        super().__init__(creds, "s3", REGION)
        self._payload_hash = payload_hash

    def payload(self, request):
        return self._payload_hash


def signed(method, url, body=b"", headers=None, ak=AK, sk=SK, payload_hash=None):
    """A request signed by botocore's own SigV4 signer (not ours)."""
    headers = dict(headers or {})
    payload_hash = payload_hash or hashlib.sha256(body).hexdigest()
    req = botocore.awsrequest.AWSRequest(method=method, url=url, data=body, headers=headers)
    _FixedPayloadAuth(botocore.credentials.Credentials(ak, sk), payload_hash).add_auth(req)
    p = req.prepare()
    assert p.headers["X-Amz-Content-SHA256"] == payload_hash
    return p


def test_boto3_cli_s3cmd_with_principals(authgw, rgw, bucket, tmp_path):
    gw = authgw
    c = gw.client(AK, SK)
    body = os.urandom(200 * 1024)
    c.put_object(Bucket=bucket, Key="auth/b3", Body=body)
    assert c.get_object(Bucket=bucket, Key="auth/b3")["Body"].read() == body
    assert rgw.client().get_object(Bucket=bucket, Key="auth/b3")["Body"].read() == body

    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(20 * 1024 * 1024))  # multipart with the aws cli
    r = gw.aws(["s3", "cp", str(big), f"s3://{bucket}/auth/cli"], access_key=AK, secret_key=SK)
    assert r.returncode == 0, r.stderr
    r = gw.aws(["s3", "ls", f"s3://{bucket}/auth/"], access_key=AK, secret_key=SK)
    assert r.returncode == 0 and "cli" in r.stdout, r.stderr
    assert rgw.client().get_object(Bucket=bucket, Key="auth/cli")["Body"].read() == big.read_bytes()

    src = tmp_path / "s.bin"
    src.write_bytes(b"s3cmd body")
    r = gw.s3cmd(["put", str(src), f"s3://{bucket}/auth/s3cmd"], access_key=AK, secret_key=SK)
    assert r.returncode == 0, r.stderr
    r = gw.s3cmd(["ls", f"s3://{bucket}/auth/"], access_key=AK, secret_key=SK)
    assert r.returncode == 0 and "s3cmd" in r.stdout, r.stderr

    url = c.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "auth/b3"},
                                   ExpiresIn=300)
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == body
    record("boto3 (SigV4)", "PUT, GET, presigned GET with a principal")
    record("aws cli v2 (Debian)", "multipart s3 cp, s3 ls with a principal")
    record("s3cmd (SigV4)", "put, ls with a principal")


def test_wrong_secret_unknown_key_refused(authgw, rgw, bucket):
    gw = authgw
    with pytest.raises(ClientError) as e:
        gw.client(AK, "not-the-secret").put_object(Bucket=bucket, Key="auth/bad", Body=b"x")
    assert e.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(ClientError) as e:
        gw.client("AKIANOBODY", SK).put_object(Bucket=bucket, Key="auth/bad", Body=b"x")
    assert e.value.response["Error"]["Code"] == "InvalidAccessKeyId"
    r = requests.put(f"{gw.url}/{bucket}/auth/bad", data=b"anonymous", timeout=10)
    assert r.status_code == 403 and error_code(r) == "AccessDenied"
    r = requests.get(f"{gw.url}/{bucket}/auth/bad", headers={
        "Authorization": "AWS4-HMAC-SHA256 Credential=garbage"}, timeout=10)
    assert r.status_code == 400 and error_code(r) == "AuthorizationHeaderMalformed"
    assert rgw_keys(rgw, bucket, "auth/bad") == []


def test_principal_bucket_list(authgw, rgw, bucket):
    with pytest.raises(ClientError) as e:
        authgw.client(AK2, SK2).put_object(Bucket=bucket, Key="auth/denied", Body=b"x")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    assert rgw_keys(rgw, bucket, "auth/denied") == []


def test_tampered_body_refused_nothing_stored(authgw, rgw, bucket):
    gw = authgw
    url = f"{gw.url}/{bucket}/auth/tampered"
    p = signed("PUT", url, b"the body that was signed")
    r = requests.put(url, data=b"the body that was SIGNED", headers=dict(p.headers), timeout=10)
    assert r.status_code == 400 and error_code(r) == "XAmzContentSHA256Mismatch", r.text
    # a signed header changed in flight
    p = signed("PUT", url, b"abc", headers={"x-amz-meta-who": "alice"})
    h = dict(p.headers)
    h["x-amz-meta-who"] = "mallory"
    r = requests.put(url, data=b"abc", headers=h, timeout=10)
    assert r.status_code == 403 and error_code(r) == "SignatureDoesNotMatch"
    assert rgw_keys(rgw, bucket, "auth/tampered") == []
    # the untampered request works
    p = signed("PUT", url, b"abc")
    r = requests.put(url, data=b"abc", headers=dict(p.headers), timeout=10)
    assert r.status_code == 200, r.text
    assert rgw_keys(rgw, bucket, "auth/tampered") == ["auth/tampered"]


def test_expired_presigned_url(authgw, rgw, bucket):
    gw = authgw
    rgw.client().put_object(Bucket=bucket, Key="auth/pre", Body=b"presigned")
    url = gw.client(AK, SK).generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "auth/pre"}, ExpiresIn=1)
    time.sleep(2.2)
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and error_code(r) == "AccessDenied", r.text
    put_url = gw.client(AK, SK).generate_presigned_url(
        "put_object", Params={"Bucket": bucket, "Key": "auth/pre-put"}, ExpiresIn=300)
    r = requests.put(put_url, data=b"via presigned put", timeout=10)
    assert r.status_code == 200, r.text
    assert rgw.client().get_object(Bucket=bucket, Key="auth/pre-put")["Body"].read() == \
        b"via presigned put"


def test_skewed_clock_refused(authgw, rgw, bucket):
    gw = authgw
    url = f"{gw.url}/{bucket}/auth/skew"
    old = datetime.datetime.utcnow() - datetime.timedelta(minutes=20)
    req = botocore.awsrequest.AWSRequest(method="PUT", url=url, data=b"x",
                                         headers={"x-amz-content-sha256":
                                                  hashlib.sha256(b"x").hexdigest()})
    signer = botocore.auth.S3SigV4Auth(botocore.credentials.Credentials(AK, SK), "s3", REGION)
    orig = botocore.auth.datetime.datetime

    class Frozen(orig):
        @classmethod
        def utcnow(cls):
            return old

    botocore.auth.datetime.datetime = Frozen
    try:
        signer.add_auth(req)
    finally:
        botocore.auth.datetime.datetime = orig
    p = req.prepare()
    r = requests.put(url, data=b"x", headers=dict(p.headers), timeout=10)
    assert r.status_code == 403 and error_code(r) == "RequestTimeTooSkewed", r.text
    assert rgw_keys(rgw, bucket, "auth/skew") == []


# ---- aws-chunked streaming uploads ----

def _hmac(key, msg):
    return hmac.new(key, msg.encode() if isinstance(msg, str) else msg, hashlib.sha256)


def signing_key(sk, date):
    k = _hmac(("AWS4" + sk).encode(), date).digest()
    k = _hmac(k, REGION).digest()
    k = _hmac(k, "s3").digest()
    return _hmac(k, "aws4_request").digest()


def chunked_put(url, data, chunk, ak=AK, sk=SK, tamper_chunk=None):
    """A STREAMING-AWS4-HMAC-SHA256-PAYLOAD upload as minio-go sends it: the seed
    signature over the head (by botocore), then each chunk signed in chain."""
    nchunks = (len(data) + chunk - 1) // chunk
    wire_len = 0
    sizes = [min(chunk, len(data) - i * chunk) for i in range(nchunks)] + [0]
    for n in sizes:
        wire_len += len(f"{n:x};chunk-signature=") + 64 + 2 + n + 2
    headers = {"x-amz-decoded-content-length": str(len(data)),
               "Content-Length": str(wire_len)}
    p = signed("PUT", url, headers=headers, ak=ak, sk=sk,
               payload_hash="STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
    authz = p.headers["Authorization"]
    seed = authz.rsplit("Signature=", 1)[1]
    amz_date = p.headers["X-Amz-Date"]
    scope = f"{amz_date[:8]}/{REGION}/s3/aws4_request"
    key = signing_key(sk, amz_date[:8])
    prev = seed
    body = b""
    empty = hashlib.sha256(b"").hexdigest()
    for i, n in enumerate(sizes):
        piece = data[i * chunk:i * chunk + n]
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev, empty,
                         hashlib.sha256(piece).hexdigest()])
        sig = _hmac(key, sts).hexdigest()
        prev = sig
        if tamper_chunk == i:
            piece = bytes([piece[0] ^ 1]) + piece[1:]
        body += f"{n:x};chunk-signature={sig}\r\n".encode() + piece + b"\r\n"
    assert len(body) == wire_len
    return requests.put(url, data=body, headers=dict(p.headers), timeout=30)


def test_signed_chunked_upload(authgw, rgw, bucket):
    gw = authgw
    data = os.urandom(200 * 1024 + 17)
    r = chunked_put(f"{gw.url}/{bucket}/auth/chunked", data, 64 * 1024)
    assert r.status_code == 200, r.text
    got = rgw.client().get_object(Bucket=bucket, Key="auth/chunked")
    assert got["Body"].read() == data  # RGW stored the decoded body, not the framing


def test_signed_chunked_upload_tampered_chunk(authgw, rgw, bucket):
    gw = authgw
    data = os.urandom(200 * 1024)
    r = chunked_put(f"{gw.url}/{bucket}/auth/chunked-bad", data, 64 * 1024, tamper_chunk=2)
    assert r.status_code == 403 and error_code(r) == "SignatureDoesNotMatch", r.text
    time.sleep(0.5)
    assert rgw_keys(rgw, bucket, "auth/chunked-bad") == []


def unsigned_trailer_put(url, data, checksum_b64, ak=AK, sk=SK, encoding="aws-chunked"):
    """STREAMING-UNSIGNED-PAYLOAD-TRAILER as botocore 1.43 sends it over https:
    aws-chunked framing with a crc32 trailer, inside Transfer-Encoding: chunked."""
    framed = f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n" + \
        f"x-amz-checksum-crc32:{checksum_b64}\r\n\r\n".encode()
    headers = {"x-amz-decoded-content-length": str(len(data)),
               "Content-Encoding": encoding, "x-amz-trailer": "x-amz-checksum-crc32",
               "x-amz-sdk-checksum-algorithm": "CRC32"}
    p = signed("PUT", url, headers=headers, ak=ak, sk=sk,
               payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    h = {k: v for k, v in p.headers.items() if k.lower() != "content-length"}

    def gen():
        for i in range(0, len(framed), 1000):
            yield framed[i:i + 1000]
    return requests.put(url, data=gen(), headers=h, timeout=30)  # requests: chunked TE


def test_unsigned_trailer_upload(authgw, rgw, bucket):
    gw = authgw
    data = os.urandom(50 * 1024)
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    r = unsigned_trailer_put(f"{gw.url}/{bucket}/auth/trailer", data, crc)
    assert r.status_code == 200, r.text
    assert rgw.client().get_object(Bucket=bucket, Key="auth/trailer")["Body"].read() == data
    bad = base64.b64encode((zlib.crc32(data) ^ 1).to_bytes(4, "big")).decode()
    r = unsigned_trailer_put(f"{gw.url}/{bucket}/auth/trailer-bad", data, bad)
    assert r.status_code == 400 and error_code(r) == "BadDigest", r.text
    time.sleep(0.5)
    assert rgw_keys(rgw, bucket, "auth/trailer-bad") == []


def test_secrets_never_logged(gateway, rgw, bucket):
    gw = gateway(dict(principals(), log_level="debug"), env={"FG_READER_SECRET": SK2})
    c = gw.client(AK, SK)
    c.put_object(Bucket=bucket, Key="auth/log", Body=b"x")
    with pytest.raises(ClientError):
        gw.client(AK, "wrong-secret-value").get_object(Bucket=bucket, Key="auth/log")
    gw.stop()
    log = gw.log()
    for secret in (SK, SK2, rgw.secret_key, "wrong-secret-value"):
        assert secret not in log
    assert "Signature=" not in log and "Authorization" not in log


def test_anonymous_refused_on_public_listener(tmp_path, rgw):
    cfg = {"listen": ["0.0.0.0:19999"], "data_dir": str(tmp_path),
           "upstream": {"endpoint": rgw.endpoint, "access_key": "a", "secret_key": "b"}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cfg))
    r = subprocess.run([gateway_bin(), "check-config", "-c", str(path)], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode != 0
    assert "principals" in r.stderr and "allow_anonymous" in r.stderr
    cfg["allow_anonymous"] = True
    path.write_text(json.dumps(cfg))
    r = subprocess.run([gateway_bin(), "check-config", "-c", str(path)], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 0 and r.stdout.strip() == "configuration OK", r.stderr


def test_multipart_with_principals_boto3_and_s3cmd(authgw, rgw, bucket, tmp_path):
    gw = authgw
    c = gw.client(AK, SK)
    parts = [os.urandom(5 * 1024 * 1024), b"tail"]
    up = c.create_multipart_upload(Bucket=bucket, Key="auth/mp")
    etags = [{"PartNumber": i, "ETag": c.upload_part(Bucket=bucket, Key="auth/mp", PartNumber=i,
                                                     UploadId=up["UploadId"], Body=p)["ETag"]}
             for i, p in enumerate(parts, 1)]
    c.complete_multipart_upload(Bucket=bucket, Key="auth/mp", UploadId=up["UploadId"],
                                MultipartUpload={"Parts": etags})
    assert rgw.client().get_object(Bucket=bucket, Key="auth/mp")["Body"].read() == b"".join(parts)
    big = tmp_path / "big"
    big.write_bytes(os.urandom(11 * 1024 * 1024))
    r = gw.s3cmd(["put", "--multipart-chunk-size-mb=5", str(big), f"s3://{bucket}/auth/s3mp"],
                 access_key=AK, secret_key=SK)
    assert r.returncode == 0, r.stderr
    assert rgw.client().get_object(Bucket=bucket, Key="auth/s3mp")["Body"].read() == \
        big.read_bytes()
