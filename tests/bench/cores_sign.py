#!/usr/bin/env python3
"""tests/bench/cores_sign.py: what tests/bench/cores_bench.sh needs from Python,
standard library only (the bench must run on a bare machine: no boto3).

  cores_sign.py ports N
      N free TCP ports on 127.0.0.1, one line, space-separated.
  cores_sign.py sign HOST PATH BODYFILE ACCESS_KEY SECRET_KEY [REGION]
      The headers of a SigV4-signed PUT of BODYFILE to http://HOST/PATH with a
      signed payload (x-amz-content-sha256 is the body's SHA-256, which the
      gateway must compute to check it), dated now: three lines "name: value"
      (x-amz-date, x-amz-content-sha256, authorization).  wrk replays them;
      the gateway accepts a date within 15 minutes of its clock, so the bench
      signs again before each run.
"""

import datetime
import hashlib
import hmac
import socket
import sys


def ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    print(" ".join(str(s.getsockname()[1]) for s in socks))
    for s in socks:
        s.close()


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sign(host, path, bodyfile, ak, sk, region="us-east-1"):
    with open(bodyfile, "rb") as f:
        payload = hashlib.sha256(f.read()).hexdigest()
    now = datetime.datetime.now(datetime.timezone.utc)
    amzdate = now.strftime("%Y%m%dT%H%M%SZ")
    day = amzdate[:8]
    # AWS SigV4, "Create a canonical request": method, URI, query, headers, signed list, payload
    canonical = "\n".join([
        "PUT", path, "",
        "host:%s\nx-amz-content-sha256:%s\nx-amz-date:%s\n" % (host, payload, amzdate),
        "host;x-amz-content-sha256;x-amz-date", payload])
    scope = "%s/%s/s3/aws4_request" % (day, region)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(("AWS4" + sk).encode(), day)
    for part in (region, "s3", "aws4_request"):
        key = _hmac(key, part)
    sig = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    print("x-amz-date: " + amzdate)
    print("x-amz-content-sha256: " + payload)
    print("authorization: AWS4-HMAC-SHA256 Credential=%s/%s, "
          "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%s" % (ak, scope, sig))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "ports":
        ports(int(sys.argv[2]))
    elif len(sys.argv) in (7, 8) and sys.argv[1] == "sign":
        sign(*sys.argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
