"""rclone (Debian's) through the gateway with a principal, default settings
(no --s3-no-check-bucket): its usual operations - mkdir, copyto, copy, rcat,
ls/lsjson, cat, delete, moveto, sync - plus a multipart upload and fenced
uploads with the token in an upload header.  Checked at RGW."""
import json
import os
import shutil
import subprocess
import time

import pytest

from clients_record import record
from test_auth import AK, SK, rgw_keys
from test_sigv2 import acquire, worker_gateway
from test_windows import LOCK, body_at_rgw

pytestmark = pytest.mark.skipif(shutil.which("rclone") is None, reason="rclone not installed")
MiB = 1024 * 1024


@pytest.fixture
def rgw_gw(gateway, tmp_path, bucket):
    return worker_gateway(gateway, tmp_path, bucket)


def rclone(gw, tmp_path, *args, sk=SK, input=None):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "RCLONE_CONFIG": os.devnull,
        "RCLONE_CONFIG_FG_TYPE": "s3",
        "RCLONE_CONFIG_FG_PROVIDER": "Other",
        "RCLONE_CONFIG_FG_ENDPOINT": gw.url,
        "RCLONE_CONFIG_FG_ACCESS_KEY_ID": AK,
        "RCLONE_CONFIG_FG_SECRET_ACCESS_KEY": sk,
        "RCLONE_CONFIG_FG_FORCE_PATH_STYLE": "true",
    }
    return subprocess.run(["rclone", "--retries", "1", "--low-level-retries", "1", *map(str, args)],
                          env=env, capture_output=True, text=(input is None or
                                                              isinstance(input, str)),
                          input=input, timeout=180)


def ok(r):
    assert r.returncode == 0, r.stderr
    return r


def test_rclone_default_operations(rgw_gw, rgw, bucket, tmp_path):
    gw = rgw_gw
    fg = f"fg:{bucket}"
    ok(rclone(gw, tmp_path, "mkdir", fg))  # CreateBucket of the existing bucket
    a = tmp_path / "a.txt"
    a.write_bytes(b"file a\n")
    ok(rclone(gw, tmp_path, "copyto", a, f"{fg}/rc/a.txt"))
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    for name, body in (("one", b"1"), ("two", b"22"), ("sub/three", b"333")):
        (src / name).write_bytes(body)
    ok(rclone(gw, tmp_path, "copy", src, f"{fg}/rc/dir"))
    ok(rclone(gw, tmp_path, "rcat", f"{fg}/rc/rcat.txt", input="from stdin\n"))
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(12 * MiB + 5))
    ok(rclone(gw, tmp_path, "copyto", "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M",
              big, f"{fg}/rc/big.bin"))
    assert body_at_rgw(rgw, bucket, "rc/big.bin") == big.read_bytes()
    assert "-" in rgw.client().head_object(Bucket=bucket, Key="rc/big.bin")["ETag"]

    ls = ok(rclone(gw, tmp_path, "ls", f"{fg}/rc")).stdout
    for name in ("a.txt", "dir/one", "dir/two", "dir/sub/three", "rcat.txt", "big.bin"):
        assert name in ls, ls
    items = json.loads(ok(rclone(gw, tmp_path, "lsjson", "-R", f"{fg}/rc/dir")).stdout)
    assert sorted(i["Path"] for i in items if not i["IsDir"]) == ["one", "sub/three", "two"]
    assert ok(rclone(gw, tmp_path, "cat", f"{fg}/rc/rcat.txt")).stdout == "from stdin\n"

    ok(rclone(gw, tmp_path, "moveto", f"{fg}/rc/a.txt", f"{fg}/rc/moved.txt"))
    assert body_at_rgw(rgw, bucket, "rc/moved.txt") == b"file a\n"
    assert rgw_keys(rgw, bucket, "rc/a.txt") == []

    ok(rclone(gw, tmp_path, "delete", f"{fg}/rc/dir"))
    assert rgw_keys(rgw, bucket, "rc/dir/") == []

    # sync: uploads what is new or changed, deletes what the source lacks
    ok(rclone(gw, tmp_path, "copy", src, f"{fg}/rc/sync"))
    (src / "two").write_bytes(b"changed")
    (src / "one").unlink()
    (src / "four").write_bytes(b"4444")
    ok(rclone(gw, tmp_path, "sync", src, f"{fg}/rc/sync"))
    assert sorted(rgw_keys(rgw, bucket, "rc/sync/")) == \
        ["rc/sync/four", "rc/sync/sub/three", "rc/sync/two"]
    assert body_at_rgw(rgw, bucket, "rc/sync/two") == b"changed"
    record("rclone (Debian, default settings)",
           "mkdir, copyto, copy, rcat, multipart copyto, ls, lsjson, cat, moveto, delete, sync")


def test_rclone_fenced_uploads(rgw_gw, rgw, bucket, tmp_path):
    gw = rgw_gw
    fg = f"fg:{bucket}"
    stale = acquire(gw, "rc-old", 300)["token"]
    time.sleep(0.6)
    tok = acquire(gw, "rc", 60000)["token"]
    f = tmp_path / "f.txt"
    f.write_bytes(b"fenced by rclone\n")
    # --header adds to every request, unsigned (safe: a changed token can only be refused)
    hdr = ["--header", f"X-Fencing-Token: {tok}", "--header", f"X-Fencing-Lock: {LOCK}"]
    ok(rclone(gw, tmp_path, "copyto", *hdr, f, f"{fg}/orders/rc.txt"))
    head = rgw.client().head_object(Bucket=bucket, Key="orders/rc.txt")
    assert head["Metadata"]["fencing-epoch"] == str(tok)
    # without the token: refused (428), nothing stored
    r = rclone(gw, tmp_path, "copyto", f, f"{fg}/orders/none.txt")
    assert r.returncode != 0
    assert rgw_keys(rgw, bucket, "orders/none.txt") == []
    # the token as metadata (--header-upload takes only x-amz-meta-* and standard headers)
    meta = ["--header-upload", f"X-Amz-Meta-Fencing-Token: {tok}", "--header-upload",
            f"X-Amz-Meta-Fencing-Lock: {LOCK}"]
    ok(rclone(gw, tmp_path, "copyto", *meta, f, f"{fg}/orders/meta.txt"))
    assert body_at_rgw(rgw, bucket, "orders/meta.txt") == b"fenced by rclone\n"
    # a stale token: StaleFencingToken, once (--retries 1 --low-level-retries 1)
    stale_hdr = ["--header-upload", f"X-Amz-Meta-Fencing-Token: {stale}", "--header-upload",
                 f"X-Amz-Meta-Fencing-Lock: {LOCK}"]
    r = rclone(gw, tmp_path, "copyto", *stale_hdr, f, f"{fg}/orders/stale.txt")
    assert r.returncode != 0 and "StaleFencingToken" in r.stderr, r.stderr
    assert rgw_keys(rgw, bucket, "orders/stale.txt") == []
    # the wrong secret
    r = rclone(gw, tmp_path, "copyto", f, f"{fg}/rc/bad.txt", sk="not-the-secret")
    # (its first request is a HEAD: the 403 has no body to name the code)
    assert r.returncode != 0 and "status code: 403" in r.stderr, r.stderr
    assert rgw_keys(rgw, bucket, "rc/bad.txt") == []
    record("rclone (Debian, default settings)", "fenced copyto; no token 428",
           "--header \"X-Fencing-Token: N\" (sent unsigned)")
    record("rclone (Debian, default settings)",
           "fenced copyto with metadata; stale token refused once; wrong secret refused",
           "--header-upload \"X-Amz-Meta-Fencing-Token: N\"")
