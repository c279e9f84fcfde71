"""The harness itself, straight against RGW (no gateway): every client works,
and RGW really checks SigV4, so it catches a wrong re-signing later."""

import hashlib
import json
import os
import signal
import textwrap

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
import requests
from botocore.exceptions import ClientError

from conftest import REGION, deep_merge

BODY = os.urandom(64 * 1024) + b"fencegate"


def test_boto3_put_get_list_delete(rgw, bucket):
    c = rgw.client()
    c.put_object(Bucket=bucket, Key="a/one", Body=BODY)
    c.put_object(Bucket=bucket, Key="a/two", Body=b"2")
    assert c.get_object(Bucket=bucket, Key="a/one")["Body"].read() == BODY
    keys = [o["Key"] for o in c.list_objects_v2(Bucket=bucket, Prefix="a/")["Contents"]]
    assert keys == ["a/one", "a/two"]
    c.delete_object(Bucket=bucket, Key="a/one")
    with pytest.raises(ClientError) as e:
        c.head_object(Bucket=bucket, Key="a/one")
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")


def test_aws_cli_put_get_list_delete(rgw, bucket, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(BODY)
    r = rgw.aws(["s3", "cp", src, f"s3://{bucket}/cli/obj"])
    assert r.returncode == 0, r.stderr
    r = rgw.aws(["s3", "ls", f"s3://{bucket}/cli/"])
    assert r.returncode == 0 and "obj" in r.stdout, r.stderr
    r = rgw.aws(["s3", "cp", f"s3://{bucket}/cli/obj", tmp_path / "back.bin"])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "back.bin").read_bytes() == BODY
    r = rgw.aws(["s3api", "delete-object", "--bucket", bucket, "--key", "cli/obj"])
    assert r.returncode == 0, r.stderr
    r = rgw.aws(["s3api", "list-objects-v2", "--bucket", bucket, "--output", "json"])
    assert r.returncode == 0, r.stderr
    assert not json.loads(r.stdout or "{}").get("Contents")


def test_s3cmd_put_get_list_delete(rgw, bucket, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(BODY)
    r = rgw.s3cmd(["put", src, f"s3://{bucket}/s3cmd/obj"])
    assert r.returncode == 0, r.stderr
    r = rgw.s3cmd(["ls", f"s3://{bucket}/s3cmd/"])
    assert r.returncode == 0 and f"s3://{bucket}/s3cmd/obj" in r.stdout, r.stderr
    r = rgw.s3cmd(["get", f"s3://{bucket}/s3cmd/obj", tmp_path / "back.bin"])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "back.bin").read_bytes() == BODY
    r = rgw.s3cmd(["del", f"s3://{bucket}/s3cmd/obj"])
    assert r.returncode == 0, r.stderr
    assert "Contents" not in rgw.client().list_objects_v2(Bucket=bucket)


def test_rgw_rejects_wrong_secret(rgw, bucket):
    bad = rgw.client(secret_key="not-the-secret-key-0000000")
    with pytest.raises(ClientError) as e:
        bad.put_object(Bucket=bucket, Key="x", Body=b"x")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert e.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    with pytest.raises(ClientError) as e:
        rgw.client(access_key="NOSUCHACCESSKEY").list_buckets()
    assert e.value.response["Error"]["Code"] == "InvalidAccessKeyId"


def test_rgw_checks_payload_hash(rgw, bucket):
    # A correctly signed request whose body does not match the signed
    # x-amz-content-sha256 is refused: RGW verifies the payload, too.
    url = f"{rgw.endpoint}/{bucket}/hashed"
    signed = b"the body that was signed"
    req = botocore.awsrequest.AWSRequest(
        method="PUT",
        url=url,
        data=signed,
        headers={"x-amz-content-sha256": hashlib.sha256(signed).hexdigest()},
    )
    creds = botocore.credentials.Credentials(rgw.access_key, rgw.secret_key)
    botocore.auth.S3SigV4Auth(creds, "s3", REGION).add_auth(req)
    headers = dict(req.headers.items())
    ok = requests.put(url, data=signed, headers=headers, timeout=10)
    assert ok.status_code == 200, ok.text
    bad = requests.put(url, data=b"X" * len(signed), headers=headers, timeout=10)
    assert bad.status_code == 400, bad.text
    assert "XAmzContentSHA256Mismatch" in bad.text


def test_deep_merge():
    base = {"a": {"b": 1, "c": [1]}, "d": 1}
    got = deep_merge(base, {"a": {"c": [2], "e": 3}, "d": None, "f": {"g": 1}})
    assert got == {"a": {"b": 1, "c": [2], "e": 3}, "f": {"g": 1}}
    assert base == {"a": {"b": 1, "c": [1]}, "d": 1}


FAKE_GATEWAY = textwrap.dedent(
    """\
    #!/usr/bin/python3
    # Stand-in for `fencegate serve -c FILE`: answers /healthz, exits 0 on TERM.
    import json, os, signal, sys, http.server
    assert sys.argv[1:3] == ["serve", "-c"], sys.argv
    cfg = json.load(open(sys.argv[3]))
    assert os.environ[cfg["upstream"]["access_key_env"]]
    host, port = cfg["listen"][0].rsplit(":", 1)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(cfg).encode()
            self.send_response(200 if self.path == "/healthz" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            sys.stderr.write("fake: %s\\n" % (a[0] % a[1:]))
    srv = http.server.HTTPServer((host, int(port)), H)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    print("fake gateway on", port, file=sys.stderr, flush=True)
    srv.serve_forever()
    """
)


def test_gateway_fixture_lifecycle(gateway, rgw, tmp_path, monkeypatch):
    # Exercises the gateway fixture with a stand-in binary, so the harness is
    # known good before (and independent of) the real one.
    fake = tmp_path / "fake-fencegate"
    fake.write_text(FAKE_GATEWAY)
    fake.chmod(0o755)
    monkeypatch.setenv("FENCEGATE_BIN", str(fake))
    gw = gateway({"upstream": {"region": "eu-west-1"}, "fences": []})
    cfg = requests.get(gw.url + "/config", timeout=5).json()
    assert cfg["upstream"] == {
        "endpoint": rgw.endpoint,
        "region": "eu-west-1",
        "addressing": "path",
        "access_key_env": "FG_UP_AK",
        "secret_key_env": "FG_UP_SK",
    }
    assert cfg["listen"] == [gw.host] and cfg["fences"] == []
    assert cfg["data_dir"] == str(gw.data_dir)
    pid = gw.pid
    gw.restart()
    assert gw.pid != pid and gw.alive()
    assert gw.kill9() == -signal.SIGKILL and not gw.alive()
    gw.start()
    assert gw.stop() == 0
    assert "fake gateway on" in gw.log()
