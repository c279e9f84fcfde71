"""Multipart uploads under epochs (issue 6, "Which writes"): the gateway
remembers which epoch created each upload; once the lock's highest advances,
that upload can no longer be added to or completed (even with the current
token), and it is aborted at the upstream in the background.  Through the
real gateway to RGW with boto3; grants via tests/helpers/store_seed."""

import time

import pytest
from botocore.exceptions import ClientError

from test_fencing import LOCK, boto3_with_token, grant, rgw_body, wait_audit


def rules(bucket, **fencing):
    r = {"fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                     "require_token": True}]}
    if fencing:
        r["fencing"] = fencing
    return r


def start_upload(c, bucket, key, body=b"part one of the zombie"):
    up = c.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    etag = c.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=body)["ETag"]
    return up, {"Parts": [{"PartNumber": 1, "ETag": etag}]}


def open_uploads(rgw, bucket):
    r = rgw.client().list_multipart_uploads(Bucket=bucket)
    return {u["UploadId"] for u in r.get("Uploads", [])}


def test_zombie_complete_refused_and_upload_aborted(gateway, rgw, bucket):
    gw = gateway(rules(bucket))
    grant(gw, 1)
    a = boto3_with_token(gw, 1)
    up, parts = start_upload(a, bucket, "orders/mp-zombie")
    assert up in open_uploads(rgw, bucket)

    grant(gw, 2)  # A paused past its lease; B acquired epoch 2 and writes
    boto3_with_token(gw, 2).put_object(Bucket=bucket, Key="orders/b", Body=b"B")

    with pytest.raises(ClientError) as e:  # A wakes up and commits its parts
        a.complete_multipart_upload(Bucket=bucket, Key="orders/mp-zombie", UploadId=up,
                                    MultipartUpload=parts)
    err = e.value.response
    assert err["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert err["Error"]["Code"] == "StaleFencingToken"
    assert rgw_body(rgw, bucket, "orders/mp-zombie") is None

    # The advance to epoch 2 aborted A's upload at RGW: no orphan parts.
    for _ in range(100):
        if up not in open_uploads(rgw, bucket):
            break
        time.sleep(0.05)
    assert up not in open_uploads(rgw, bucket)
    assert "aborted upload" in gw.log()


def test_new_leader_cannot_complete_old_epoch_upload(gateway, rgw, bucket):
    # Without the background abort the old upload stays, so the refusal is
    # what keeps it from being committed.
    gw = gateway(rules(bucket, abort_stale_uploads=False))
    grant(gw, 1)
    up, parts = start_upload(boto3_with_token(gw, 1), bucket, "orders/mp-old")
    grant(gw, 2)
    b = boto3_with_token(gw, 2)
    b.put_object(Bucket=bucket, Key="orders/b2", Body=b"B")  # the fence is at 2 now
    with pytest.raises(ClientError) as e:  # current token, old upload: refused
        b.upload_part(Bucket=bucket, Key="orders/mp-old", UploadId=up, PartNumber=2,
                      Body=b"more")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    with pytest.raises(ClientError) as e:
        b.complete_multipart_upload(Bucket=bucket, Key="orders/mp-old", UploadId=up,
                                    MultipartUpload=parts)
    err = e.value.response
    assert err["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert err["Error"]["Code"] == "StaleFencingToken"
    assert err["Error"]["Token"] == "1" and err["Error"]["CurrentToken"] == "2"
    assert rgw_body(rgw, bucket, "orders/mp-old") is None
    time.sleep(0.3)
    assert up in open_uploads(rgw, bucket)  # abort_stale_uploads off: left alone
    recs = wait_audit(gw, 2, lock=LOCK)
    assert [(r["kind"], r["token"], r["current_token"], r["operation"]) for r in recs] == \
        [("stale", 1, 2, "UploadPart"), ("stale", 1, 2, "CompleteMultipartUpload")]
    # Its creator can still abort it (a stale token is refused for that too,
    # so the operator does it at RGW).
    rgw.client().abort_multipart_upload(Bucket=bucket, Key="orders/mp-old", UploadId=up)


def test_current_leader_multipart_completes(gateway, rgw, bucket):
    gw = gateway(rules(bucket))
    grant(gw, 3)
    c = boto3_with_token(gw, 3)
    up, parts = start_upload(c, bucket, "orders/mp-ok", b"leader 3 data")
    r = c.complete_multipart_upload(Bucket=bucket, Key="orders/mp-ok", UploadId=up,
                                    MultipartUpload=parts)
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-fencing-current-token"] == "3"
    assert rgw_body(rgw, bucket, "orders/mp-ok") == b"leader 3 data"
    head = rgw.client().head_object(Bucket=bucket, Key="orders/mp-ok")
    assert head["Metadata"]["fencing-epoch"] == "3"
    # A later advance has nothing of epoch 3 left to abort: the upload was forgotten.
    grant(gw, 4)
    boto3_with_token(gw, 4).put_object(Bucket=bucket, Key="orders/next", Body=b"4")
    time.sleep(0.3)
    assert "aborted upload" not in gw.log()
    assert rgw_body(rgw, bucket, "orders/mp-ok") == b"leader 3 data"


def test_leader_abort_forgets_upload(gateway, rgw, bucket):
    gw = gateway(rules(bucket))
    grant(gw, 5)
    c = boto3_with_token(gw, 5)
    up, _ = start_upload(c, bucket, "orders/mp-abort")
    c.abort_multipart_upload(Bucket=bucket, Key="orders/mp-abort", UploadId=up)
    assert up not in open_uploads(rgw, bucket)
    grant(gw, 6)
    boto3_with_token(gw, 6).put_object(Bucket=bucket, Key="orders/n", Body=b"6")
    time.sleep(0.3)
    assert "aborted upload" not in gw.log()
