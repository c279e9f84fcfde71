"""A checksum the client sends as an aws-chunked trailer, and what goes upstream.

upstream.checksum_trailers: "forward" re-frames the verified body as
STREAMING-UNSIGNED-PAYLOAD-TRAILER with the client's checksum as its trailer;
"verify" checks it at the gateway and forwards the plain body; "auto" asks the
upstream at start-up.  A relay between the gateway and RGW records what the
gateway really sends, and the re-framed body is compared with what botocore's
own encoder (AwsChunkedWrapper, the SDK's code, not ours) makes of the same
payload.  Debian's RGW 16 takes no trailers: it must answer the forwarded form
with XAmzContentSHA256Mismatch (the signature verified: otherwise it would say
SignatureDoesNotMatch), store nothing, and the auto probe must say "verify"."""

import base64
import hashlib
import io
import os
import subprocess
import time
import zlib

import boto3
import botocore.config
import requests
import urllib3
from botocore.httpchecksum import AwsChunkedWrapper, Crc32Checksum

from conftest import free_port
from relay import DelayRelay, split_request
from test_auth import AK, SK, SK2, error_code, principals, rgw_keys, signed, unsigned_trailer_put


def crc32_b64(data):
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def relayed_gateway(gateway, rgw, mode, extra=None):
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    cfg = dict(principals(), upstream={"endpoint": f"http://127.0.0.1:{relay.port}",
                                       "checksum_trailers": mode})
    cfg.update(extra or {})
    gw = gateway(cfg, env={"FG_READER_SECRET": SK2})
    return gw, relay


def puts_to(relay, key):
    out = []
    for raw in relay.requests:
        line, headers, body = split_request(raw)
        if line.startswith("PUT ") and key in line:
            out.append((headers, body))
    return out


def metric(gw, name):
    for line in requests.get(gw.url + "/metrics", timeout=5).text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    return None


def test_forward_reframes_like_the_sdk(gateway, rgw, bucket):
    gw, relay = relayed_gateway(gateway, rgw, "forward")
    try:
        assert metric(gw, "fencegate_checksum_trailers_forwarded") == 1
        data = os.urandom(150 * 1024 + 3)  # two full 64 KiB chunks and a rest
        r = unsigned_trailer_put(f"{gw.url}/{bucket}/tr/fwd", data, crc32_b64(data))
        # RGW 16 does not take trailers; its answer comes back as is
        assert r.status_code == 400 and error_code(r) == "XAmzContentSHA256Mismatch", r.text
        (headers, body), = puts_to(relay, "/tr/fwd")
        want = AwsChunkedWrapper(io.BytesIO(data), checksum_cls=Crc32Checksum,
                                 checksum_name="x-amz-checksum-crc32", chunk_size=65536).read()
        assert body == want
        assert headers["content-length"] == str(len(want))
        assert headers["x-amz-content-sha256"] == "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
        assert headers["content-encoding"] == "aws-chunked"
        assert headers["x-amz-decoded-content-length"] == str(len(data))
        assert headers["x-amz-trailer"] == "x-amz-checksum-crc32"
        assert headers["x-amz-sdk-checksum-algorithm"] == "CRC32"
        assert "transfer-encoding" not in headers
        signed_headers = headers["authorization"].split("SignedHeaders=")[1].split(",")[0]
        for h in ("content-encoding", "x-amz-decoded-content-length", "x-amz-trailer",
                  "x-amz-content-sha256"):
            assert h in signed_headers.split(";")
        assert rgw_keys(rgw, bucket, "tr/") == []

        # a wrong client checksum: refused here, and the upstream never got the trailer
        bad = crc32_b64(data + b"x")
        r = unsigned_trailer_put(f"{gw.url}/{bucket}/tr/fwd-bad", data, bad)
        assert r.status_code == 400 and error_code(r) == "BadDigest", r.text
        for _, body in puts_to(relay, "/tr/fwd-bad"):
            assert b"x-amz-checksum-crc32" not in body
        assert rgw_keys(rgw, bucket, "tr/") == []
    finally:
        relay.close()


def test_verify_forwards_the_plain_body(gateway, rgw, bucket):
    gw, relay = relayed_gateway(gateway, rgw, "verify")
    try:
        assert metric(gw, "fencegate_checksum_trailers_forwarded") == 0
        data = os.urandom(100 * 1024)
        r = unsigned_trailer_put(f"{gw.url}/{bucket}/tr/plain", data, crc32_b64(data))
        assert r.status_code == 200, r.text
        assert rgw.client().get_object(Bucket=bucket, Key="tr/plain")["Body"].read() == data
        (headers, body), = puts_to(relay, "/tr/plain")
        assert body == data
        assert headers["content-length"] == str(len(data))
        assert headers["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD"
        # no framing headers, and no checksum algorithm without its checksum (S3 refuses that)
        for h in ("content-encoding", "x-amz-decoded-content-length", "x-amz-trailer",
                  "x-amz-sdk-checksum-algorithm", "x-amz-checksum-crc32"):
            assert h not in headers, h
    finally:
        relay.close()


def test_a_coding_list_keeps_its_other_codings(gateway, rgw, bucket):
    """Content-Encoding "aws-chunked, gzip": the gateway takes the framing
    off (verify) and sends the rest of the list for the object, as S3 keeps
    it; re-framed (forward), aws-chunked goes first again."""
    data = os.urandom(10 * 1024)
    gw, relay = relayed_gateway(gateway, rgw, "verify")
    try:
        r = unsigned_trailer_put(f"{gw.url}/{bucket}/tr/gz", data, crc32_b64(data),
                                 encoding="aws-chunked, gzip")
        assert r.status_code == 200, r.text
        (headers, body), = puts_to(relay, "/tr/gz")
        assert headers["content-encoding"] == "gzip" and body == data
        assert rgw.client().head_object(Bucket=bucket, Key="tr/gz")["ContentEncoding"] == "gzip"
    finally:
        relay.close()
    gw, relay = relayed_gateway(gateway, rgw, "forward")
    try:
        r = unsigned_trailer_put(f"{gw.url}/{bucket}/tr/gz2", data, crc32_b64(data),
                                 encoding="aws-chunked, gzip")
        assert r.status_code == 400, r.text  # RGW 16 does not take trailers
        (headers, _), = puts_to(relay, "/tr/gz2")
        assert headers["content-encoding"] == "aws-chunked, gzip"
    finally:
        relay.close()


def test_header_checksum_forwarded_as_is(gateway, rgw, bucket):
    """The other way clients send a checksum: a header, before the body."""
    gw, relay = relayed_gateway(gateway, rgw, "verify")
    try:
        data = b"checksum in a header"
        p = signed("PUT", f"{gw.url}/{bucket}/tr/hdr", body=data,
                   headers={"x-amz-checksum-crc32": crc32_b64(data),
                            "x-amz-sdk-checksum-algorithm": "CRC32"})
        r = requests.put(p.url, data=data, headers=dict(p.headers), timeout=10)
        assert r.status_code == 200, r.text
        (headers, body), = puts_to(relay, "/tr/hdr")
        assert headers["x-amz-checksum-crc32"] == crc32_b64(data)
        assert headers["x-amz-sdk-checksum-algorithm"] == "CRC32"
        assert body == data
    finally:
        relay.close()


def test_delete_objects_trailer_checksum_becomes_a_header(gateway, rgw, bucket):
    """DeleteObjects is read into memory (to find its keys): the checksum is
    known before the body goes up, so it goes along as the header."""
    gw, relay = relayed_gateway(gateway, rgw, "verify")
    try:
        c = rgw.client()
        for k in ("tr/d1", "tr/d2"):
            c.put_object(Bucket=bucket, Key=k, Body=b"x")
        doc = (b'<?xml version="1.0" encoding="UTF-8"?><Delete>'
               b"<Object><Key>tr/d1</Key></Object><Object><Key>tr/d2</Key></Object></Delete>")
        framed = f"{len(doc):x}\r\n".encode() + doc + b"\r\n0\r\n" + \
            f"x-amz-checksum-crc32:{crc32_b64(doc)}\r\n\r\n".encode()
        headers = {"x-amz-decoded-content-length": str(len(doc)),
                   "Content-Encoding": "aws-chunked", "x-amz-trailer": "x-amz-checksum-crc32",
                   "x-amz-sdk-checksum-algorithm": "CRC32",
                   "Content-MD5": base64.b64encode(hashlib.md5(doc).digest()).decode()}
        url = f"{gw.url}/{bucket}?delete"
        p = signed("POST", url, headers=headers, payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
        r = requests.post(p.url, data=framed, headers=dict(p.headers), timeout=10)
        assert r.status_code == 200, r.text
        posts = [split_request(raw) for raw in relay.requests if raw.startswith(b"POST ")]
        (_, up, body), = posts
        assert body == doc
        assert up["x-amz-checksum-crc32"] == crc32_b64(doc)
        assert up["x-amz-sdk-checksum-algorithm"] == "CRC32"
        assert "x-amz-trailer" not in up and "content-encoding" not in up
        assert rgw_keys(rgw, bucket, "tr/") == []
    finally:
        relay.close()


def test_auto_probes_the_upstream(gateway, rgw, bucket):
    locks = bucket + "-locks"
    rgw.client().create_bucket(Bucket=locks)
    gw = gateway(dict(principals(), election={"backend": "s3", "bucket": locks,
                                              "prefix": "fencegate/"}),
                 env={"FG_READER_SECRET": SK2})
    deadline = time.monotonic() + 20
    while "aws-chunked checksum trailers" not in gw.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "upstream does not take aws-chunked checksum trailers" in gw.log(), gw.log()
    assert metric(gw, "fencegate_checksum_trailers_forwarded") == 0
    data = os.urandom(70 * 1024)
    r = unsigned_trailer_put(f"{gw.url}/{bucket}/tr/auto", data, crc32_b64(data))
    assert r.status_code == 200, r.text
    assert rgw.client().get_object(Bucket=bucket, Key="tr/auto")["Body"].read() == data
    # the probe object is gone again
    deadline = time.monotonic() + 10
    while rgw_keys(rgw, locks, "fencegate/~probe/trailers-") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert rgw_keys(rgw, locks, "fencegate/~probe/trailers-") == []


def test_auto_probes_with_the_dir_backend(gateway, rgw, bucket, tmp_path):
    """The probe is a call of the gateway's own S3 client, not of the s3
    election backend: with election.backend "dir" it runs in the fenced
    bucket (the first fence rule's), signed like every other upstream call,
    and cleans up after itself."""
    gw, relay = relayed_gateway(gateway, rgw, "auto", extra={
        "election": {"backend": "dir", "path": str(tmp_path / "locks"), "prefix": "fencegate/"},
        "fences": [{"bucket": bucket, "prefix": "orders/", "lock": "orders"}]})
    try:
        deadline = time.monotonic() + 20
        while "aws-chunked checksum trailers" not in gw.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "upstream does not take aws-chunked checksum trailers" in gw.log(), gw.log()
        assert metric(gw, "fencegate_checksum_trailers_forwarded") == 0
        probes = puts_to(relay, f"/{bucket}/fencegate/~probe/trailers-")
        assert len(probes) == 1, relay.requests
        headers, _ = probes[0]
        assert headers["x-amz-content-sha256"] == "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
        assert headers["x-amz-trailer"] == "x-amz-checksum-crc32"
        assert "Credential=" + rgw.access_key + "/" in headers["authorization"]
        deadline = time.monotonic() + 10
        while rgw_keys(rgw, bucket, "fencegate/~probe/") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rgw_keys(rgw, bucket, "fencegate/~probe/") == []
    finally:
        relay.close()


def test_auto_without_an_s3_bucket_verifies(gateway, rgw, bucket):
    gw = gateway(principals(), env={"FG_READER_SECRET": SK2})
    assert "verified here, not forwarded" in gw.log()
    assert metric(gw, "fencegate_checksum_trailers_forwarded") == 0
    data = os.urandom(1000)
    r = unsigned_trailer_put(f"{gw.url}/{bucket}/tr/noprobe", data, crc32_b64(data), ak=AK, sk=SK)
    assert r.status_code == 200, r.text



def test_boto3_over_tls_sends_trailers(gateway, rgw, bucket, tmp_path):
    """A real SDK's trailer: boto3 with ChecksumAlgorithm over https sends
    STREAMING-UNSIGNED-PAYLOAD-TRAILER (over http it sends a header).  Through
    the gateway's TLS listener in "verify" mode it is verified and stored."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    tls_port = free_port()
    gw, relay = relayed_gateway(gateway, rgw, "verify", extra={"listen": [
        f"127.0.0.1:{free_port()}",
        {"address": f"127.0.0.1:{tls_port}", "tls_cert": str(cert), "tls_key": str(key)}]})
    try:
        urllib3.disable_warnings()
        c = boto3.client("s3", endpoint_url=f"https://127.0.0.1:{tls_port}",
                         aws_access_key_id=AK, aws_secret_access_key=SK,
                         region_name="us-east-1", verify=False,
                         config=botocore.config.Config(s3={"addressing_style": "path"}))
        sent = []
        c.meta.events.register("before-send.s3.PutObject",
                               lambda request, **kw: sent.append(
                                   {k.lower(): v.decode() if isinstance(v, bytes) else v
                                    for k, v in request.headers.items()}))
        data = os.urandom(300 * 1024)
        c.put_object(Bucket=bucket, Key="tr/boto3", Body=data, ChecksumAlgorithm="CRC32")
        assert sent[0]["x-amz-content-sha256"] == "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
        assert sent[0]["x-amz-trailer"] == "x-amz-checksum-crc32"
        assert rgw.client().get_object(Bucket=bucket, Key="tr/boto3")["Body"].read() == data
        (headers, body), = puts_to(relay, "/tr/boto3")
        assert body == data and "x-amz-trailer" not in headers
        assert "x-amz-sdk-checksum-algorithm" not in headers
    finally:
        relay.close()
