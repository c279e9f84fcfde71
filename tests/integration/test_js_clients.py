"""JavaScript clients, unmodified, through the gateway with a principal and a
fence rule: the AWS SDK for JavaScript v3 (default settings: CRC32 checksums,
aws-chunked trailers) and MinIO's client.  Each runs tests/js/<client>.mjs
with node from build/js (npm packages pinned in tests/js/package-lock.json,
installed by `make js-deps`), which prints one JSON line of step results;
the results are then checked here and at RGW."""
import hashlib
import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from clients_record import record
from test_auth import AK, SK, rgw_keys
from test_sigv2 import acquire, worker_gateway
from test_windows import LOCK

REPO = Path(__file__).resolve().parents[2]
JS_SRC = REPO / "tests" / "js"


def js_dir():
    build = Path(os.environ.get("FENCEGATE_BUILD") or REPO / "build")
    d = build / "js"
    if not (d / "node_modules" / "@aws-sdk" / "client-s3").is_dir() or \
            not (d / "node_modules" / "minio").is_dir():
        # `make integration` installs them (make js-deps); a direct pytest run does it here
        subprocess.run(["make", "-C", str(REPO), f"BUILD={build}", "js-deps"], check=True,
                       timeout=600, stdin=subprocess.DEVNULL)
    for f in JS_SRC.glob("*.mjs"):
        shutil.copy(f, d / f.name)
    return d


@pytest.fixture(scope="module")
def jsdir():
    if shutil.which("node") is None:
        pytest.fail("node is not installed (make deps installs Debian's nodejs)")
    return js_dir()


@pytest.fixture
def jsgw(gateway, tmp_path, bucket):
    return worker_gateway(gateway, tmp_path, bucket)


def run_js(jsdir, script, gw, bucket):
    stale = acquire(gw, "js-old", 300)["token"]
    time.sleep(0.6)  # the old holder's lease runs out: its token is now stale
    tok = acquire(gw, "js", 60000)["token"]
    assert tok > stale
    run = uuid.uuid4().hex[:8]
    env = dict(os.environ, FG_ENDPOINT=gw.url, FG_AK=AK, FG_SK=SK, FG_BUCKET=bucket,
               FG_LOCK=LOCK, FG_TOKEN=str(tok), FG_STALE=str(stale), FG_RUN=run)
    env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    t0 = time.monotonic()
    p = subprocess.run(["node", str(jsdir / script)], capture_output=True, text=True,
                       timeout=240, env=env, cwd=jsdir, stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    failed = {k: v for k, v in res.items() if not v["ok"]}
    assert not failed, (failed, p.stderr[-2000:])
    return res, run, tok, took


def rgw_body(rgw, bucket, key):
    return rgw.client().get_object(Bucket=bucket, Key=key)["Body"].read()


def rgw_sha(rgw, bucket, key):
    return hashlib.sha256(rgw_body(rgw, bucket, key)).hexdigest()


def check_common(res, rgw, bucket, prefix, fenced, tok):
    """What both clients must have done, checked at RGW."""
    assert rgw_sha(rgw, bucket, prefix + "small") == res["put_small"]["sha256"]
    assert rgw_sha(rgw, bucket, prefix + "big") == res["put_multipart"]["sha256"]
    big_etag = rgw.client().head_object(Bucket=bucket, Key=prefix + "big")["ETag"]
    assert "-" in big_etag, big_etag  # really a multipart upload
    assert res["list_v2_continuation"]["keys"] == [f"{prefix}list/{i}" for i in range(5)]
    assert res["list_v2_continuation"]["pages"] == 3
    assert rgw_sha(rgw, bucket, prefix + "copy") == res["put_small"]["sha256"]
    assert rgw_keys(rgw, bucket, prefix + "list/") == []
    assert rgw_sha(rgw, bucket, prefix + "presigned") == res["presigned_get_put"]["sha256"]
    assert rgw_sha(rgw, bucket, fenced + "mp") == res["fenced_multipart_metadata"]["sha256"]
    head = rgw.client().head_object(Bucket=bucket, Key=fenced + "mp")
    assert head["Metadata"].get("fencing-epoch") == str(tok), head["Metadata"]
    assert res["stale_token"]["code"] == "StaleFencingToken", res["stale_token"]
    assert rgw_keys(rgw, bucket, fenced + "stale") == []
    assert res["wrong_secret"]["code"] == "SignatureDoesNotMatch", res["wrong_secret"]
    assert rgw_keys(rgw, bucket, prefix + "bad") == []
    assert not rgw.client().list_multipart_uploads(Bucket=bucket).get("Uploads")


@pytest.mark.slow
def test_aws_sdk_js_v3(jsdir, jsgw, rgw, bucket):
    res, run, tok, took = run_js(jsdir, "sdkv3.mjs", jsgw, bucket)
    prefix, fenced = f"js/sdkv3-{run}/", f"orders/sdkv3-{run}/"
    check_common(res, rgw, bucket, prefix, fenced, tok)
    assert rgw_sha(rgw, bucket, prefix + "streamed") == res["put_stream_chunked"]["sha256"]
    assert res["get_range"]["status"] == 206
    assert res["delete_objects"] == {"ok": True, "ms": res["delete_objects"]["ms"],
                                     "deleted": 5, "errors": 0}
    assert rgw_body(rgw, bucket, fenced + "hdr") == rgw_body(rgw, bucket, prefix + "small")
    # one attempt: a 409 is an answer, not something to retry
    assert res["stale_token"]["status"] == 409, res["stale_token"]
    assert res["stale_token"]["attempts"] == 1, res["stale_token"]
    assert res["put_small"]["attempts"] == 1
    print(f"sdk v3 script: {took:.1f} s")
    version = json.loads((jsdir / "node_modules/@aws-sdk/client-s3/package.json").read_text())
    record(f"AWS SDK for JavaScript v3 ({version['version']})",
           "PutObject (CRC32; streamed aws-chunked with trailer), lib-storage multipart 64 MiB, "
           "ranged GET, LIST v2 with continuation, COPY, DeleteObjects, presigned GET/PUT, "
           "fenced PUT and multipart, stale token → 409 StaleFencingToken in 1 attempt, "
           "wrong secret refused",
           "X-Fencing-Token header added by a build-step middleware; Metadata on "
           "CreateMultipartUpload (lib-storage Upload)")


@pytest.mark.slow
def test_minio_js(jsdir, jsgw, rgw, bucket):
    res, run, tok, took = run_js(jsdir, "minio.mjs", jsgw, bucket)
    prefix, fenced = f"js/minio-{run}/", f"orders/minio-{run}/"
    check_common(res, rgw, bucket, prefix, fenced, tok)
    assert res["delete_objects"]["left"] == []
    assert rgw_body(rgw, bucket, fenced + "small") == rgw_body(rgw, bucket, prefix + "small")
    # no retry loop: one refusal, answered at once (the client does not expose the status)
    assert res["stale_token"]["ms"] < 5000, res["stale_token"]
    print(f"minio script: {took:.1f} s")
    version = json.loads((jsdir / "node_modules/minio/package.json").read_text())
    record(f"MinIO JavaScript client ({version['version']})",
           "putObject small and multipart 64 MiB, getPartialObject, listObjectsV2Query with "
           "continuation, copyObject, removeObjects, presigned GET/PUT, fenced put and "
           "multipart, stale token → 409 StaleFencingToken, wrong secret refused",
           "metadata (x-amz-meta-fencing-token) on PutObject and CreateMultipartUpload")
