"""DeleteObjects fenced as one write (issue 6, "Which writes"): every key must
fall under the same lock; the claim is that lock with the request's token.
Through the real gateway to RGW with boto3; grants via tests/helpers/store_seed."""

import pytest
import requests
from botocore.exceptions import ClientError

from test_fencing import LOCK, boto3_with_token, grant, rgw_body, wait_audit


@pytest.fixture
def dgw(gateway, bucket):
    rules = {"fences": [
        {"bucket": bucket, "prefix": "orders/", "lock": LOCK, "require_token": True},
        {"bucket": bucket, "prefix": "archive/", "lock": LOCK, "require_token": True},
        {"bucket": bucket, "prefix": "billing/", "lock": "billing", "require_token": True},
    ]}
    return gateway(rules)


def seed(rgw, bucket, keys):
    c = rgw.client()
    for k in keys:
        c.put_object(Bucket=bucket, Key=k, Body=b"x " + k.encode())


def delete_doc(keys):
    return {"Objects": [{"Key": k} for k in keys], "Quiet": False}


def test_delete_objects_one_lock(dgw, rgw, bucket):
    keys = ["orders/d1", "orders/d2", "archive/d3"]  # two rules, one lock
    seed(rgw, bucket, keys)
    grant(dgw, 3)
    c = boto3_with_token(dgw, 3)
    r = c.delete_objects(Bucket=bucket, Delete=delete_doc(keys))
    assert sorted(d["Key"] for d in r["Deleted"]) == sorted(keys)
    assert not r.get("Errors")
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-fencing-current-token"] == "3"
    for k in keys:
        assert rgw_body(rgw, bucket, k) is None


def test_delete_objects_mixed_locks_refused(dgw, rgw, bucket):
    keys = ["orders/m1", "billing/m2"]
    seed(rgw, bucket, keys + ["free/m3"])
    grant(dgw, 2)
    c = boto3_with_token(dgw, 2)
    for mixed in (keys, ["orders/m1", "free/m3"]):  # another lock; no lock at all
        with pytest.raises(ClientError) as e:
            c.delete_objects(Bucket=bucket, Delete=delete_doc(mixed))
        err = e.value.response
        assert err["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert err["Error"]["Code"] == "FencingLockMismatch"
    for k in keys + ["free/m3"]:
        assert rgw_body(rgw, bucket, k) is not None  # nothing deleted
    recs = wait_audit(dgw, 2, kind="lock_mismatch")
    # both refusals: the same principal, lock, token and operation: one record, count 2
    assert sum(r["count"] for r in recs) >= 2 and all(r["operation"] == "DeleteObjects"
                                                      for r in recs)


def test_delete_objects_stale_token_refused(dgw, rgw, bucket):
    keys = ["orders/s1", "orders/s2"]
    seed(rgw, bucket, keys)
    grant(dgw, 4)
    boto3_with_token(dgw, 4).put_object(Bucket=bucket, Key="orders/s0", Body=b"leader 4")
    with pytest.raises(ClientError) as e:
        boto3_with_token(dgw, 3).delete_objects(Bucket=bucket, Delete=delete_doc(keys))
    err = e.value.response
    assert err["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert err["Error"]["Code"] == "StaleFencingToken"
    assert err["Error"]["CurrentToken"] == "4"
    for k in keys:
        assert rgw_body(rgw, bucket, k) is not None
    recs = wait_audit(dgw, 1, kind="stale")
    assert [(r["token"], r["current_token"], r["operation"]) for r in recs] == \
        [(3, 4, "DeleteObjects")]


def test_delete_objects_missing_token_and_bad_documents(dgw, rgw, bucket):
    seed(rgw, bucket, ["orders/t1"])
    with pytest.raises(ClientError) as e:  # fenced keys, no token
        dgw.client().delete_objects(Bucket=bucket, Delete=delete_doc(["orders/t1"]))
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 428
    assert rgw_body(rgw, bucket, "orders/t1") is not None
    # Keys no rule covers and no token: an unfenced write, forwarded from memory.
    seed(rgw, bucket, ["free/u1"])
    r = dgw.client().delete_objects(Bucket=bucket, Delete=delete_doc(["free/u1"]))
    assert [d["Key"] for d in r["Deleted"]] == ["free/u1"]
    assert rgw_body(rgw, bucket, "free/u1") is None
    # Malformed and oversized documents (unsigned requests: auth is not the point here).
    url = f"{dgw.url}/{bucket}?delete"
    hdrs = {"X-Fencing-Token": "1", "X-Fencing-Lock": LOCK}
    for body in (b"<Delete><Object><Key>orders/t1</Key>", b"<Delete></Delete>",
                 b"<Delete>" + b"<Object><Key>orders/t1</Key></Object>" * 30000 + b"</Delete>"):
        resp = signed_post(dgw, url, body, hdrs)
        assert resp.status_code == 400, resp.text
        assert "<Code>MalformedXML</Code>" in resp.text
    assert rgw_body(rgw, bucket, "orders/t1") is not None


def signed_post(gw, url, body, headers):
    """A SigV4-signed POST with the gateway's test credentials (botocore's signer)."""
    import hashlib
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    c = gw.client()
    creds = c._request_signer._credentials
    h = dict(headers)
    h["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
    req = AWSRequest(method="POST", url=url, data=body, headers=h)
    S3SigV4Auth(creds, "s3", c.meta.region_name).add_auth(req)
    return requests.post(url, data=body, headers=dict(req.headers), timeout=30)
