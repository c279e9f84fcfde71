"""The gateway as a faithful streaming S3 proxy: real clients (boto3, aws cli,
s3cmd) through the real binary to a real RGW, checking what RGW stored
directly (never only what the gateway says)."""

import hashlib
import json
import os
import socket
import threading
import time

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import gateway_bin


def sanitizer_build():
    """ASan keeps freed memory in quarantine and adds shadow memory, so peak
    RSS says nothing about the gateway's own buffering under sanitizers."""
    with open(gateway_bin(), "rb") as f:
        return b"__asan_init" in f.read()


def rgw_bytes(rgw, bucket, key):
    return rgw.client().get_object(Bucket=bucket, Key=key)["Body"].read()


def rgw_keys(rgw, bucket, prefix=""):
    r = rgw.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for o in r.get("Contents", [])]


def raw_request(gw, data, read_timeout=5.0):
    """Sends raw bytes, returns everything the gateway answers until it closes or goes quiet."""
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=read_timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


def status_of(resp):
    return int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/1.") else None


# ---- every client, every common operation ----


def test_boto3_operations(gateway, rgw, bucket):
    gw = gateway()
    c = gw.client()
    body = os.urandom(300 * 1024)
    c.put_object(Bucket=bucket, Key="b3/one", Body=body, Metadata={"color": "blue"})
    assert rgw_bytes(rgw, bucket, "b3/one") == body

    got = c.get_object(Bucket=bucket, Key="b3/one")
    assert got["Body"].read() == body
    assert got["Metadata"] == {"color": "blue"}
    head = c.head_object(Bucket=bucket, Key="b3/one")
    assert head["ContentLength"] == len(body)
    rng = c.get_object(Bucket=bucket, Key="b3/one", Range="bytes=100-199")
    assert rng["Body"].read() == body[100:200]
    assert rng["ResponseMetadata"]["HTTPStatusCode"] == 206

    c.put_object(Bucket=bucket, Key="b3/two", Body=b"two")
    listed = c.list_objects_v2(Bucket=bucket, Prefix="b3/")
    assert [o["Key"] for o in listed["Contents"]] == ["b3/one", "b3/two"]

    c.copy_object(Bucket=bucket, Key="b3/copy", CopySource={"Bucket": bucket, "Key": "b3/one"})
    assert rgw_bytes(rgw, bucket, "b3/copy") == body

    c.put_object_tagging(Bucket=bucket, Key="b3/two",
                         Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    tags = rgw.client().get_object_tagging(Bucket=bucket, Key="b3/two")["TagSet"]
    assert tags == [{"Key": "k", "Value": "v"}]
    assert c.get_object_tagging(Bucket=bucket, Key="b3/two")["TagSet"] == tags

    c.delete_object(Bucket=bucket, Key="b3/copy")
    res = c.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "b3/one"}, {"Key": "b3/two"}]})
    assert sorted(d["Key"] for d in res["Deleted"]) == ["b3/one", "b3/two"]
    assert rgw_keys(rgw, bucket, "b3/") == []

    with pytest.raises(ClientError) as e:
        c.get_object(Bucket=bucket, Key="b3/one")
    assert e.value.response["Error"]["Code"] == "NoSuchKey"


def test_boto3_multipart(gateway, rgw, bucket):
    gw = gateway()
    c = gw.client()
    parts = [os.urandom(5 * 1024 * 1024), os.urandom(5 * 1024 * 1024), b"tail"]
    up = c.create_multipart_upload(Bucket=bucket, Key="mp/obj")
    etags = []
    for i, p in enumerate(parts, 1):
        r = c.upload_part(Bucket=bucket, Key="mp/obj", UploadId=up["UploadId"], PartNumber=i, Body=p)
        etags.append({"PartNumber": i, "ETag": r["ETag"]})
    listed = c.list_parts(Bucket=bucket, Key="mp/obj", UploadId=up["UploadId"])
    assert [p["PartNumber"] for p in listed["Parts"]] == [1, 2, 3]
    c.complete_multipart_upload(Bucket=bucket, Key="mp/obj", UploadId=up["UploadId"],
                                MultipartUpload={"Parts": etags})
    assert rgw_bytes(rgw, bucket, "mp/obj") == b"".join(parts)

    up2 = c.create_multipart_upload(Bucket=bucket, Key="mp/aborted")
    c.abort_multipart_upload(Bucket=bucket, Key="mp/aborted", UploadId=up2["UploadId"])
    assert rgw_keys(rgw, bucket, "mp/aborted") == []


def test_aws_cli(gateway, rgw, bucket, tmp_path):
    gw = gateway()
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(20 * 1024 * 1024))  # over the cli's 8 MiB threshold: multipart
    r = gw.aws(["s3", "cp", str(big), f"s3://{bucket}/cli/big.bin"])
    assert r.returncode == 0, r.stderr
    assert rgw_bytes(rgw, bucket, "cli/big.bin") == big.read_bytes()

    back = tmp_path / "back.bin"
    r = gw.aws(["s3", "cp", f"s3://{bucket}/cli/big.bin", str(back)])
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == big.read_bytes()

    small = tmp_path / "small.txt"
    small.write_bytes(b"hello from the aws cli\n")
    r = gw.aws(["s3api", "put-object", "--bucket", bucket, "--key", "cli/small.txt",
                "--body", str(small), "--metadata", "purpose=proxy-test"])
    assert r.returncode == 0, r.stderr
    head = rgw.client().head_object(Bucket=bucket, Key="cli/small.txt")
    assert head["Metadata"].get("purpose") == "proxy-test"

    r = gw.aws(["s3", "ls", f"s3://{bucket}/cli/"])
    assert r.returncode == 0, r.stderr
    assert "big.bin" in r.stdout and "small.txt" in r.stdout

    r = gw.aws(["s3", "rm", f"s3://{bucket}/cli/big.bin"])
    assert r.returncode == 0, r.stderr
    assert rgw_keys(rgw, bucket, "cli/") == ["cli/small.txt"]


def test_s3cmd(gateway, rgw, bucket, tmp_path):
    gw = gateway()
    src = tmp_path / "s.bin"
    src.write_bytes(os.urandom(100 * 1024))
    r = gw.s3cmd(["put", str(src), f"s3://{bucket}/s3cmd/s.bin",
                  "--add-header=x-amz-meta-purpose:proxy-test"])
    assert r.returncode == 0, r.stderr
    assert rgw_bytes(rgw, bucket, "s3cmd/s.bin") == src.read_bytes()
    r = gw.s3cmd(["ls", f"s3://{bucket}/s3cmd/"])
    assert r.returncode == 0 and "s.bin" in r.stdout, r.stderr
    dst = tmp_path / "d.bin"
    r = gw.s3cmd(["get", f"s3://{bucket}/s3cmd/s.bin", str(dst)])
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == src.read_bytes()
    r = gw.s3cmd(["del", f"s3://{bucket}/s3cmd/s.bin"])
    assert r.returncode == 0, r.stderr
    assert rgw_keys(rgw, bucket, "s3cmd/") == []


def test_keys_are_forwarded_byte_for_byte(gateway, rgw, bucket):
    """S3 does not normalise keys; neither may the gateway (DESIGN "One key, one meaning")."""
    gw = gateway()
    c = gw.client()
    keys = ["k/a/../b", "k/a//b", "k/with space", "k/ünïcødé", "k/plus+sign", "k/%41"]
    for k in keys:
        c.put_object(Bucket=bucket, Key=k, Body=k.encode())
    assert sorted(rgw_keys(rgw, bucket, "k/")) == sorted(keys)
    for k in keys:
        assert rgw_bytes(rgw, bucket, k) == k.encode()
    assert "k/b" not in rgw_keys(rgw, bucket, "k/")


# ---- streaming and memory ----


class Pattern:
    """A file-like object producing size bytes of a cheap pattern, hashing as it goes."""

    def __init__(self, size):
        self.size = size
        self.pos = 0
        self.block = hashlib.sha256(b"fencegate").digest() * 2048  # 64 KiB
        self.sha = hashlib.sha256()

    def read(self, n=-1):
        if n < 0 or n > len(self.block):
            n = len(self.block)
        n = min(n, self.size - self.pos)
        if n <= 0:
            return b""
        off = self.pos % len(self.block)
        chunk = (self.block[off:] + self.block)[:n]
        self.pos += n
        self.sha.update(chunk)
        return chunk

    def __len__(self):
        return self.size


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.slow  # 35 s under ASan; the 48 MiB transfers run the same code there
def test_1gib_put_and_get_bounded_memory(gateway, rgw, bucket):
    gw = gateway()
    size = 1024 * 1024 * 1024
    src = Pattern(size)
    t0 = time.monotonic()
    r = requests.put(f"{gw.url}/{bucket}/big/1g", data=src,
                     headers={"Content-Length": str(size)}, timeout=600)
    put_s = time.monotonic() - t0
    assert r.status_code == 200, r.text
    t0 = time.monotonic()
    sha = hashlib.sha256()
    got = 0
    with requests.get(f"{gw.url}/{bucket}/big/1g", stream=True, timeout=600) as g:
        assert g.status_code == 200
        for chunk in g.iter_content(1024 * 1024):
            sha.update(chunk)
            got += len(chunk)
    get_s = time.monotonic() - t0
    assert got == size
    assert sha.hexdigest() == src.sha.hexdigest()
    hwm = vm_hwm_kib(gw.pid)
    print(f"1 GiB PUT {put_s:.1f}s GET {get_s:.1f}s, gateway VmHWM {hwm / 1024:.1f} MiB")
    if not sanitizer_build():
        assert hwm < 64 * 1024, f"peak RSS {hwm} KiB"
    rgw.client().delete_object(Bucket=bucket, Key="big/1g")


def test_client_hangup_mid_upload_leaves_no_object(gateway, rgw, bucket):
    gw = gateway()
    s = socket.create_connection(("127.0.0.1", gw.port))
    s.sendall(f"PUT /{bucket}/cut/obj HTTP/1.1\r\nHost: {gw.host}\r\n"
              f"Content-Length: {10 * 1024 * 1024}\r\n\r\n".encode())
    s.sendall(os.urandom(1024 * 1024))
    time.sleep(0.3)
    s.close()
    time.sleep(1.0)
    assert rgw_keys(rgw, bucket, "cut/") == []
    # and the gateway still serves
    assert requests.get(f"{gw.url}/healthz", timeout=5).status_code == 200
    assert gw.client().list_objects_v2(Bucket=bucket)["KeyCount"] == 0


def test_slow_reader_streams_with_backpressure(gateway, rgw, bucket):
    """A client that reads slowly does not make the gateway buffer the object."""
    src = Pattern(64 * 1024 * 1024)
    data = b"".join(iter(lambda: src.read(1 << 20), b""))
    rgw.client().put_object(Bucket=bucket, Key="slow/obj", Body=data)
    del data
    gw = gateway()
    with requests.get(f"{gw.url}/{bucket}/slow/obj", stream=True, timeout=60) as g:
        first = g.raw.read(1024)
        assert len(first) == 1024
        time.sleep(2.0)  # the gateway must pause its upstream transfer, not buffer 64 MiB
        hwm = vm_hwm_kib(gw.pid)
        rest = 0
        for chunk in g.iter_content(1024 * 1024):
            rest += len(chunk)
    assert rest + 1024 == 64 * 1024 * 1024
    if not sanitizer_build():
        assert hwm < 48 * 1024, f"peak RSS {hwm} KiB while the client was not reading"


# ---- bad input, errors, limits ----


def test_malformed_requests_get_4xx_and_gateway_keeps_serving(gateway, bucket):
    gw = gateway()
    cases = [
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        b"get / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
        b"PUT /b/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n",
    ]
    for data in cases:
        resp = raw_request(gw, data)
        st = status_of(resp)
        assert st is not None and 400 <= st < 600 and st != 500, (data, resp[:200])
        assert requests.get(f"{gw.url}/healthz", timeout=5).status_code == 200


def test_empty_query_parameters_are_served(gateway, rgw, bucket):
    """"?=&=": parameters with an empty key and value.  Signing them for the
    upstream did pointer arithmetic on NULL (gw_sigv4_canonical_query); a
    SAN=address,undefined gateway died on this one request."""
    gw = gateway()
    rgw.client().put_object(Bucket=bucket, Key="x", Body=b"empty-params")
    for query in (b"=&=", b"=", b"&=&"):
        resp = raw_request(gw, b"GET /%s/x?%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                           % (bucket.encode(), query, gw.host.encode()))
        # Forwarded and answered.  RGW refuses "=&=" with 403 SignatureDoesNotMatch:
        # it seems to sign the repeated empty parameter once, where SigV4 keeps both.
        assert status_of(resp) in ((200, 403) if query == b"=&=" else (200,)), (query, resp[:300])
        if status_of(resp) == 200:
            assert resp.endswith(b"\r\n\r\nempty-params"), resp[-200:]
    assert gw.alive()
    assert gw.sanitizer_reports() == []
    assert requests.get(f"{gw.url}/healthz", timeout=5).status_code == 200


def test_oversized_headers_431(gateway):
    gw = gateway()
    big = b"X-Big: " + b"a" * (70 * 1024) + b"\r\n"
    resp = raw_request(gw, b"GET /b/k HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n")
    assert status_of(resp) == 431, resp[:200]
    assert b"<Code>" in resp
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(300))
    resp = raw_request(gw, b"GET /b/k HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    assert status_of(resp) == 431, resp[:200]
    assert requests.get(f"{gw.url}/healthz", timeout=5).status_code == 200


def test_long_url_414(gateway):
    gw = gateway()
    resp = raw_request(gw, b"GET /b/" + b"k" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status_of(resp) == 414, resp[:200]


def test_upstream_unreachable_502(gateway, rgw):
    port = _closed_port()
    gw = gateway({"upstream": {"endpoint": f"http://127.0.0.1:{port}"}})
    r = requests.get(f"{gw.url}/somebucket/key", timeout=10)
    assert r.status_code == 502
    assert "<Code>" in r.text and "<RequestId>" in r.text


def test_upstream_timeout_504(gateway, rgw):
    """An upstream that accepts and never answers: the gateway gives up with 504."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    held = []
    stop = threading.Event()

    def hold():
        lsock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = lsock.accept()
                held.append(conn)
            except socket.timeout:
                continue

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    try:
        gw = gateway({"upstream": {"endpoint": f"http://127.0.0.1:{lsock.getsockname()[1]}",
                                   "timeout_ms": 1000}})
        t0 = time.monotonic()
        r = requests.get(f"{gw.url}/somebucket/key", timeout=30)
        assert r.status_code == 504
        assert time.monotonic() - t0 < 10
        assert requests.get(f"{gw.url}/healthz", timeout=5).status_code == 200
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        lsock.close()


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_keepalive_and_pipelining_through_proxy(gateway, rgw, bucket):
    rgw.client().put_object(Bucket=bucket, Key="p/a", Body=b"AAAA")
    rgw.client().put_object(Bucket=bucket, Key="p/b", Body=b"BB")
    gw = gateway()
    req = (f"GET /{bucket}/p/a HTTP/1.1\r\nHost: {gw.host}\r\n\r\n"
           f"GET /{bucket}/p/b HTTP/1.1\r\nHost: {gw.host}\r\n\r\n"
           f"GET /{bucket}/p/a HTTP/1.1\r\nHost: {gw.host}\r\nConnection: close\r\n\r\n").encode()
    resp = raw_request(gw, req, read_timeout=10)
    assert resp.count(b"HTTP/1.1 200") == 3, resp
    # responses arrive in request order
    ia, ib = resp.index(b"AAAA"), resp.index(b"BB\r\n") if b"BB\r\n" in resp else resp.index(b"BB")
    assert ia < ib < resp.rindex(b"AAAA")


def test_expect_100_continue(gateway, rgw, bucket):
    gw = gateway()
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
    try:
        s.sendall(f"PUT /{bucket}/e/obj HTTP/1.1\r\nHost: {gw.host}\r\nContent-Length: 5\r\n"
                  f"Expect: 100-continue\r\n\r\n".encode())
        interim = s.recv(4096)
        assert interim.startswith(b"HTTP/1.1 100"), interim
        s.sendall(b"hello")
        final = b""
        while b"\r\n\r\n" not in final:
            final += s.recv(4096)
        assert final.startswith(b"HTTP/1.1 200"), final
    finally:
        s.close()
    assert rgw_bytes(rgw, bucket, "e/obj") == b"hello"


def test_health_and_metrics(gateway):
    gw = gateway()
    assert requests.get(f"{gw.url}/healthz", timeout=5).text == "ok\n"
    assert requests.get(f"{gw.url}/readyz", timeout=5).status_code == 200
    m = requests.get(f"{gw.url}/metrics", timeout=5)
    assert m.status_code == 200
    assert "\nfencegate_requests_total{" in m.text
    assert "# TYPE fencegate_request_duration_seconds histogram\n" in m.text


def test_aws_cli_every_operation(gateway, rgw, bucket, tmp_path):
    """head, range get, copy, list v2, tagging, delete, delete-objects with the aws cli."""
    gw = gateway()
    src = tmp_path / "src"
    src.write_bytes(os.urandom(64 * 1024))

    def ok(args):
        r = gw.aws(args)
        assert r.returncode == 0, (args, r.stderr)
        return r.stdout

    base = ["s3api", "--bucket", bucket]
    ok(base[:1] + ["put-object"] + base[1:] + ["--key", "ops/a", "--body", str(src)])
    head = json.loads(ok(base[:1] + ["head-object"] + base[1:] + ["--key", "ops/a"]))
    assert head["ContentLength"] == 64 * 1024
    out = tmp_path / "range"
    ok(base[:1] + ["get-object"] + base[1:] + ["--key", "ops/a", "--range", "bytes=10-19",
                                               str(out)])
    assert out.read_bytes() == src.read_bytes()[10:20]
    ok(base[:1] + ["copy-object"] + base[1:] + ["--key", "ops/b", "--copy-source",
                                                f"{bucket}/ops/a"])
    assert rgw_bytes(rgw, bucket, "ops/b") == src.read_bytes()
    listed = json.loads(ok(base[:1] + ["list-objects-v2"] + base[1:] + ["--prefix", "ops/"]))
    assert [o["Key"] for o in listed["Contents"]] == ["ops/a", "ops/b"]
    ok(base[:1] + ["put-object-tagging"] + base[1:] + ["--key", "ops/a", "--tagging",
                                                       "TagSet=[{Key=k,Value=v}]"])
    tags = json.loads(ok(base[:1] + ["get-object-tagging"] + base[1:] + ["--key", "ops/a"]))
    assert tags["TagSet"] == [{"Key": "k", "Value": "v"}]
    ok(base[:1] + ["delete-object"] + base[1:] + ["--key", "ops/b"])
    ok(base[:1] + ["put-object"] + base[1:] + ["--key", "ops/c", "--body", str(src)])
    ok(base[:1] + ["delete-objects"] + base[1:] + ["--delete",
                                                   "Objects=[{Key=ops/a},{Key=ops/c}]"])
    assert rgw_keys(rgw, bucket, "ops/") == []


def test_s3cmd_every_operation(gateway, rgw, bucket, tmp_path):
    """info (head), cp (copy), multipart put, recursive delete (DeleteObjects)."""
    gw = gateway()
    big = tmp_path / "big"
    big.write_bytes(os.urandom(12 * 1024 * 1024))

    def ok(args):
        r = gw.s3cmd(args)
        assert r.returncode == 0, (args, r.stderr)
        return r.stdout

    ok(["put", "--multipart-chunk-size-mb=5", str(big), f"s3://{bucket}/s3ops/big"])
    assert rgw_bytes(rgw, bucket, "s3ops/big") == big.read_bytes()
    info = ok(["info", f"s3://{bucket}/s3ops/big"])
    assert "12582912" in info
    ok(["cp", f"s3://{bucket}/s3ops/big", f"s3://{bucket}/s3ops/copy"])
    assert rgw_bytes(rgw, bucket, "s3ops/copy") == big.read_bytes()
    # (s3cmd 2.3 has no tagging command; tagging is covered with boto3 and the aws cli)
    ok(["del", "--recursive", f"s3://{bucket}/s3ops/"])
    assert rgw_keys(rgw, bucket, "s3ops/") == []


def test_virtual_hosted_both_ways(gateway, rgw, bucket):
    """Clients address buckets by host name (virtual_host_domains), and the
    gateway addresses RGW the same way (RGW answers for *.localhost)."""
    port = rgw.endpoint.rsplit(":", 1)[1]
    gw = gateway({"virtual_host_domains": ["s3.test"],
                  "upstream": {"endpoint": f"http://localhost:{port}", "addressing": "virtual"}})
    host = f"{bucket}.s3.test:{gw.port}"
    r = requests.put(f"{gw.url}/vh/one%20key", data=b"virtual", headers={"Host": host},
                     timeout=10)
    assert r.status_code == 200, r.text
    assert rgw_bytes(rgw, bucket, "vh/one key") == b"virtual"
    r = requests.get(f"{gw.url}/vh/one%20key", headers={"Host": host}, timeout=10)
    assert r.status_code == 200 and r.content == b"virtual"
    # path style still works on the same gateway, and is re-addressed virtual upstream
    r = requests.get(f"{gw.url}/{bucket}/vh/one%20key", timeout=10)
    assert r.status_code == 200 and r.content == b"virtual"
