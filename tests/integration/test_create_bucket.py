"""CreateBucket of a bucket that already exists (DESIGN "Request
classification"): rclone "ensures" its bucket with a CreateBucket before
every upload; the gateway answers it as S3 does (200) without enabling
bucket-level writes, which stay refused (403) for a bucket that does not
exist.  Through the real gateway to RGW."""
import os
import shutil
import subprocess

import pytest
import requests
from botocore.exceptions import ClientError

from test_windows import LOCK, acquire, body_at_rgw, dir_gateway


def rclone_env(gw, tmp_path):
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "RCLONE_CONFIG": os.devnull,
        "RCLONE_CONFIG_FG_TYPE": "s3",
        "RCLONE_CONFIG_FG_PROVIDER": "Other",
        "RCLONE_CONFIG_FG_ENDPOINT": gw.url,
        "RCLONE_CONFIG_FG_ACCESS_KEY_ID": gw.rgw.access_key,
        "RCLONE_CONFIG_FG_SECRET_ACCESS_KEY": gw.rgw.secret_key,
        "RCLONE_CONFIG_FG_FORCE_PATH_STYLE": "true",
    }


@pytest.mark.skipif(shutil.which("rclone") is None, reason="rclone not installed")
def test_rclone_copyto_default_settings(gateway, tmp_path, bucket, rgw):
    gw = dir_gateway(gateway, tmp_path, bucket,
                     extra={"fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                                        "require_token": True}],
                            "fencing": {"allow_unfenced_writes": True}})
    src = tmp_path / "f.txt"
    src.write_bytes(b"hello from rclone\n")
    r = subprocess.run(["rclone", "copyto", "--retries", "1", "--low-level-retries", "1",
                        str(src), f"fg:{bucket}/free/f.txt"],
                       env=rclone_env(gw, tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert body_at_rgw(rgw, bucket, "free/f.txt") == b"hello from rclone\n"


def test_create_existing_bucket_200_missing_403(gateway, tmp_path, bucket, rgw):
    gw = dir_gateway(gateway, tmp_path, bucket)
    c = gw.client()
    r = c.create_bucket(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    missing = bucket + "-nx"
    with pytest.raises(ClientError) as e:
        c.create_bucket(Bucket=missing)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    with pytest.raises(ClientError):
        rgw.client().head_bucket(Bucket=missing)
    # Configuring an existing bucket (ACL, LocationConstraint) is a bucket write.
    with pytest.raises(ClientError) as e:
        c.create_bucket(Bucket=bucket, ACL="public-read")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(ClientError) as e:
        c.create_bucket(Bucket=bucket,
                        CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
