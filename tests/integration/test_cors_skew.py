"""Two S3 answers browsers and SDKs depend on, with principals configured:
an unsigned CORS preflight gets the store's own CORS answer, and a SigV2
request outside the allowed clock skew gets RequestTimeTooSkewed."""

import base64
import email.utils
import hashlib
import hmac
import time

import requests

from test_auth import AK, SK, authgw, error_code, rgw_keys  # noqa: F401 (fixture)

ORIGIN = "https://app.example.com"


def _cors(rgw, bucket):
    rgw.client().put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [{
        "AllowedOrigins": [ORIGIN], "AllowedMethods": ["GET", "PUT"],
        "AllowedHeaders": ["*"], "MaxAgeSeconds": 600}]})


def _preflight(base, bucket, origin=ORIGIN, extra=None):
    h = {"Origin": origin, "Access-Control-Request-Method": "PUT",
         "Access-Control-Request-Headers": "content-type"}
    h.update(extra or {})
    return requests.options(f"{base}/{bucket}/cors/obj", headers=h, timeout=10)


def test_unsigned_preflight_gets_the_stores_answer(authgw, rgw, bucket):
    _cors(rgw, bucket)
    direct = _preflight(rgw.endpoint, bucket)
    assert direct.status_code == 200, direct.text
    r = _preflight(authgw.url, bucket)
    assert r.status_code == 200, r.text
    for h in ("Access-Control-Allow-Origin", "Access-Control-Allow-Methods",
              "Access-Control-Max-Age"):
        assert r.headers.get(h) == direct.headers.get(h), (h, r.headers, direct.headers)
    # an origin the rules do not allow: the store's refusal, not the gateway's auth error
    r = _preflight(authgw.url, bucket, origin="https://evil.example.com")
    d = _preflight(rgw.endpoint, bucket, origin="https://evil.example.com")
    assert r.status_code == d.status_code == 403
    assert error_code(r) == error_code(d), (r.text, d.text)
    assert "Access-Control-Allow-Origin" not in r.headers


def test_not_a_preflight_still_needs_a_signature(authgw, rgw, bucket):
    _cors(rgw, bucket)
    # no Access-Control-Request-Method: not a preflight
    r = requests.options(f"{authgw.url}/{bucket}/cors/obj", headers={"Origin": ORIGIN},
                         timeout=10)
    assert r.status_code == 403 and error_code(r) == "AccessDenied", r.text
    # a preflight with a body: refused, never forwarded as unauthenticated
    r = requests.options(f"{authgw.url}/{bucket}/cors/obj", data=b"x" * 10,
                         headers={"Origin": ORIGIN, "Access-Control-Request-Method": "PUT"},
                         timeout=10)
    assert r.status_code == 403, r.text
    # the same headers on a PUT: refused, nothing stored
    r = requests.put(f"{authgw.url}/{bucket}/cors/put", data=b"x",
                     headers={"Origin": ORIGIN, "Access-Control-Request-Method": "PUT"},
                     timeout=10)
    assert r.status_code == 403, r.text
    assert rgw_keys(rgw, bucket, "cors/") == []


def _v2_put(gw, bucket, key, when, amz_date=False):
    date = email.utils.formatdate(when, usegmt=True)
    if amz_date:  # x-amz-date instead of Date: the Date line is empty, x-amz-date signed
        sts = f"PUT\n\ntext/plain\n\nx-amz-date:{date}\n/{bucket}/{key}"
        h = {"X-Amz-Date": date}
    else:
        sts = f"PUT\n\ntext/plain\n{date}\n/{bucket}/{key}"
        h = {"Date": date}
    sig = base64.b64encode(hmac.new(SK.encode(), sts.encode(), hashlib.sha1).digest()).decode()
    h.update({"Content-Type": "text/plain", "Authorization": f"AWS {AK}:{sig}"})
    return requests.put(f"{gw.url}/{bucket}/{key}", data=b"x", headers=h, timeout=10)


def test_sigv2_skewed_clock(authgw, rgw, bucket):
    key = "skew/v2"
    for amz in (False, True):
        for off in (-3600, 3600):
            r = _v2_put(authgw, bucket, key, time.time() + off, amz)
            assert r.status_code == 403 and error_code(r) == "RequestTimeTooSkewed", r.text
    assert rgw_keys(rgw, bucket, "skew/") == []
    r = _v2_put(authgw, bucket, key, time.time(), True)
    assert r.status_code == 200, r.text
    # the same request signed now passes: the skew, not the signature, was refused
    date = email.utils.formatdate(time.time(), usegmt=True)
    sts = f"PUT\n\ntext/plain\n{date}\n/{bucket}/{key}"
    sig = base64.b64encode(hmac.new(SK.encode(), sts.encode(), hashlib.sha1).digest()).decode()
    r = requests.put(f"{authgw.url}/{bucket}/{key}", data=b"x",
                     headers={"Date": date, "Content-Type": "text/plain",
                              "Authorization": f"AWS {AK}:{sig}"}, timeout=10)
    assert r.status_code == 200, r.text
