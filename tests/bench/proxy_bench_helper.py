#!/usr/bin/python3
"""proxy_bench_helper.py: the S3 side of tests/bench/proxy_bench.sh (boto3).

  ports N                                  N free TCP ports on 127.0.0.1
  setup EP AK SK BUCKET SMALL_FILE LARGE_FILE
                                           bucket + public-read objects
                                           "small" and "large"
  presign EP AK SK BUCKET KEY [KEY...]     one presigned PUT URL per key, for
                                           the Host of EP (the Host is signed)
  presign-get EP AK SK BUCKET KEY [KEY...] the same for GET
  presign-op OP EP AK SK BUCKET KEY...     the same for boto3 operation OP
  check EP AK SK BUCKET SIZE KEY [KEY...]  HEAD each key: exit 1 unless its
                                           ContentLength is SIZE; then delete
  wrkstats FILE                            wrk --latency output -> one line
                                           "rps p50_ms p99_ms requests errors"
  acquire URL AK SK HOLDER LEASE_MS        SigV4-signed POST to the election
                                           API's acquire URL; prints the token
  report TSV                               proxy_bench_dav.sh's results ->
                                           markdown tables
"""
import re
import socket
import sys


def client(ep, ak, sk):
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=ep,
        aws_access_key_id=ak,
        aws_secret_access_key=sk,
        region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                      retries={"max_attempts": 2}),
    )


def cmd_ports(n):
    socks = []
    for _ in range(int(n)):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    print(" ".join(str(s.getsockname()[1]) for s in socks))


def cmd_setup(ep, ak, sk, bucket, small, large):
    c = client(ep, ak, sk)
    c.create_bucket(Bucket=bucket)
    for key, path in (("small", small), ("large", large)):
        with open(path, "rb") as f:
            # one single-part PUT: a plain object, no multipart manifest
            c.put_object(Bucket=bucket, Key=key, Body=f, ACL="public-read")


def cmd_presign(ep, ak, sk, bucket, *keys, op="put_object"):
    c = client(ep, ak, sk)
    for k in keys:
        print(c.generate_presigned_url(op, Params={"Bucket": bucket, "Key": k}, ExpiresIn=3600))


def cmd_presign_get(ep, ak, sk, bucket, *keys):
    cmd_presign(ep, ak, sk, bucket, *keys, op="get_object")


def cmd_presign_op(op, ep, ak, sk, bucket, *keys):
    cmd_presign(ep, ak, sk, bucket, *keys, op=op)


def cmd_check(ep, ak, sk, bucket, size, *keys):
    c = client(ep, ak, sk)
    bad = 0
    for k in keys:
        try:
            n = c.head_object(Bucket=bucket, Key=k)["ContentLength"]
        except Exception as e:  # noqa: BLE001 - report whatever went wrong
            print(f"check: {k}: {e}", file=sys.stderr)
            bad += 1
            continue
        if n != int(size):
            print(f"check: {k}: {n} bytes, want {size}", file=sys.stderr)
            bad += 1
        c.delete_object(Bucket=bucket, Key=k)
    sys.exit(1 if bad else 0)


def ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def cmd_wrkstats(path):
    t = open(path).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
    pct = {m.group(1): ms(m.group(2), m.group(3))
           for m in re.finditer(r"^\s+(\d+)%\s+([\d.]+)(us|ms|s|m)\s*$", t, re.M)}
    reqs = int(re.search(r"(\d+) requests in", t).group(1))
    errs = 0
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", t)
    if m:
        errs += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
    if m:
        errs += sum(int(x) for x in m.groups())
    print(f"{rps:.1f} {pct.get('50', 0):.3f} {pct.get('99', 0):.3f} {reqs} {errs}")


def cmd_acquire(url, ak, sk, holder, lease_ms):
    import json
    import urllib.request

    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    body = json.dumps({"holder": holder, "lease_ms": int(lease_ms)}).encode()
    req = AWSRequest(method="POST", url=url, data=body, headers={"Content-Type": "application/json"})
    S3SigV4Auth(Credentials(ak, sk), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(url, data=body, method="POST", headers=dict(req.headers.items()))
    with urllib.request.urlopen(r, timeout=10) as resp:
        print(json.load(resp)["token"])


def cmd_report(path):
    from proxy_bench_report import report

    report(path)


if __name__ == "__main__":
    cmds = {"ports": cmd_ports, "setup": cmd_setup, "presign": cmd_presign, "presign-get": cmd_presign_get, "presign-op": cmd_presign_op,
            "check": cmd_check, "wrkstats": cmd_wrkstats, "acquire": cmd_acquire, "report": cmd_report}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    cmds[sys.argv[1]](*sys.argv[2:])
