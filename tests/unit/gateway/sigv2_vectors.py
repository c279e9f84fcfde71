#!/usr/bin/python3
"""Prints the botocore-made SigV2 vectors of sigv2_test.c (run with Debian's
python3-botocore; the output is pasted into the test).  Each vector: method,
path, query, headers, virtual-hosted bucket, and the signature or presigned
query botocore's HmacV1Auth / HmacV1QueryAuth made for it."""
from urllib.parse import urlsplit

from botocore.auth import HmacV1Auth, HmacV1QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

CREDS = Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
DATE = "Mon, 23 Nov 2026 23:31:10 GMT"


class FixedV1(HmacV1Auth):
    def _get_date(self):
        return DATE


class FixedQuery(HmacV1QueryAuth):
    def _get_date(self):
        return "1795130000"


CASES = [
    # method, url, headers, auth_path (virtual-hosted: the bucket-prefixed path)
    ("PUT", "http://h/bkt/big.bin?partNumber=2&uploadId=2~AbC-def", {"Content-MD5": "1B2M2Y8AsgTpgAmY7PhCfg=="}, None),
    ("GET", "http://h/bkt?list-type=2&prefix=a&continuation-token=x", {}, None),
    ("PUT", "http://h/bkt/a%20b/c%2Bd", {"Content-Type": "text/plain", "x-amz-meta-fencing-token": "7", "X-Amz-Meta-Lock": "orders", "x-fencing-token": "7"}, None),
    ("POST", "http://h/bkt?delete", {"Content-MD5": "xyz=="}, None),
    ("GET", "http://bkt.h/k?versionId=v1&acl", {}, "/bkt/k"),
]
QCASES = [
    ("GET", "http://h/bkt/k?response-content-disposition=attachment%3B%20filename%3D%22a%20b.txt%22", {}, None),
    ("PUT", "http://h/bkt/up.txt", {"Content-Type": "text/plain", "x-amz-meta-fencing-token": "9"}, None),
]

for method, url, headers, auth_path in CASES:
    r = AWSRequest(method=method, url=url, headers=headers)
    r.auth_path = auth_path
    FixedV1(CREDS).add_auth(r)
    s = urlsplit(url)
    print(f'{{"{method}", "{s.path}", "{s.query}", {sorted(dict(r.headers).items())!r}, {auth_path!r}, "{r.headers["Authorization"]}"}},')
for method, url, headers, auth_path in QCASES:
    r = AWSRequest(method=method, url=url, headers=headers)
    r.auth_path = auth_path
    FixedQuery(CREDS, 3600).add_auth(r)
    s = urlsplit(r.url)
    print(f'{{"{method}", "{s.path}", "{s.query}"}},')

# Whole boto3 operations (path style, custom endpoint): botocore's auth path
# forms ("/bkt/", "/bkt?delete?delete") that sigv2.c accepts besides S3's.
import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

HmacV1Auth._get_date = lambda self: DATE
c = boto3.session.Session().client(
    "s3", endpoint_url="http://h", aws_access_key_id=CREDS.access_key,
    aws_secret_access_key=CREDS.secret_key, region_name="us-east-1",
    config=Config(signature_version="s3", s3={"addressing_style": "path"},
                  retries={"total_max_attempts": 1}))
sent = []


def capture(request, **kw):
    sent.append(request)
    return botocore_response()


def botocore_response():
    from botocore.awsrequest import AWSResponse

    class Raw:
        def stream(self, *a, **k):
            yield b""
    return AWSResponse("http://h", 500, {}, Raw())


c.meta.events.register("before-send.s3", capture)
for call in (lambda: c.list_objects_v2(Bucket="bkt", Prefix="p"),
             lambda: c.list_objects(Bucket="bkt"),
             lambda: c.delete_objects(Bucket="bkt", Delete={"Objects": [{"Key": "k"}]}),
             lambda: c.create_multipart_upload(Bucket="bkt", Key="k")):
    try:
        call()
    except Exception:
        pass
for r in sent:
    s = urlsplit(r.url)
    print(f'{{"{r.method}", "{s.path}", "{s.query}", "{r.headers.get("Content-MD5", b"").decode()}", '
          f'"{r.headers["Authorization"].decode().split(":", 1)[1]}"}},')
