"""The zombie story end to end, once per client (aws cli with --metadata, boto3
with a before-sign hook, s3cmd with --add-header): worker A is a real process
that acquires the lock through the election API and writes; it is frozen with
SIGSTOP past its lease; worker B acquires and writes; A is resumed and writes
with its old token: 409 StaleFencingToken, the object at RGW is B's, and the
audit log shows A's attempt with both tokens."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import requests

# Workers do not renew: A's lease must outlast its first write (the aws cli
# takes 1.5-3 s to start on a busy machine), B's all of its writes.
LEASE_MS = 5000
B_LEASE_MS = 60000

WORKER = textwrap.dedent(r'''
    import json, os, sys, time
    sys.path.insert(0, os.environ["FG_TESTS"])
    import requests
    from conftest import aws_cli, s3cmd, s3_client

    client, gw_url, host, bucket, ak, sk, out, go = sys.argv[1:9]
    r = requests.post(f"{gw_url}/_fencegate/v1/locks/orders/acquire",
                      json={"holder": os.environ["WORKER"], "lease_ms": int(os.environ["LEASE"]),
                            "wait_ms": 20000}, timeout=30)
    r.raise_for_status()
    token = r.json()["token"]

    def write(body):
        path = out + ".body"
        with open(path, "wb") as f:
            f.write(body)
        if client == "awscli":
            p = aws_cli(["s3api", "put-object", "--bucket", bucket, "--key", "orders/obj",
                         "--body", path, "--metadata", f"fencing-token={token},fencing-lock=orders"],
                        gw_url, ak, sk)
            return p.returncode == 0, p.stderr
        if client == "s3cmd":
            p = s3cmd(["put", path, f"s3://{bucket}/orders/obj",
                       f"--add-header=X-Fencing-Token:{token}"], host, ak, sk)
            return p.returncode == 0, p.stderr + p.stdout
        c = s3_client(gw_url, ak, sk)
        def add(request, **kwargs):
            request.headers["X-Fencing-Token"] = str(token)
            request.headers["X-Fencing-Lock"] = "orders"
        c.meta.events.register("before-sign.s3.*", add)
        try:
            c.put_object(Bucket=bucket, Key="orders/obj", Body=body)
            return True, ""
        except Exception as e:  # botocore ClientError
            return False, str(e)

    results = {"token": token, "first": write(f"{os.environ['WORKER']} 1".encode())}
    with open(out, "w") as f:
        json.dump(results, f)
    while not os.path.exists(go):      # A is frozen (SIGSTOP) somewhere in here
        time.sleep(0.05)
    results["second"] = write(f"{os.environ['WORKER']} 2".encode())
    with open(out, "w") as f:
        json.dump(results, f)
''')


def wait_file(path, key, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                d = json.load(f)
            if key in d:
                return d
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{path}: no {key}")


@pytest.mark.parametrize("client", ["awscli", "boto3", "s3cmd"])
def test_zombie_story(client, gateway, rgw, bucket, tmp_path):
    gw = gateway({"election": {"backend": "dir", "path": str(tmp_path / "locks"),
                               "default_lease_ms": LEASE_MS, "min_lease_ms": 200},
                  "fences": [{"bucket": bucket, "prefix": "orders/", "lock": "orders",
                              "require_token": True}]})
    deadline = time.monotonic() + 20
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, FG_TESTS=os.path.dirname(__file__), LEASE=str(LEASE_MS))

    def start(name):
        out = tmp_path / f"{name}.json"
        go = tmp_path / f"{name}.go"
        p = subprocess.Popen([sys.executable, str(script), client, gw.url, gw.host, bucket,
                              rgw.access_key, rgw.secret_key, str(out), str(go)],
                             env=dict(env, WORKER=name,
                                      LEASE=str(LEASE_MS if name == "worker-a" else B_LEASE_MS)))
        return p, out, go

    a, a_out, a_go = start("worker-a")
    try:
        first = wait_file(a_out, "first")
        assert first["first"][0], first
        os.kill(a.pid, signal.SIGSTOP)                 # a long GC pause
        time.sleep(LEASE_MS / 1000 + 0.3)              # its lease runs out
        b, b_out, b_go = start("worker-b")
        b_res = wait_file(b_out, "first")
        assert b_res["first"][0], b_res
        assert b_res["token"] == first["token"] + 1
        b_go.touch()
        b.wait(60)
        a_go.touch()
        os.kill(a.pid, signal.SIGCONT)                 # A wakes up, still "the leader"
        a_res = wait_file(a_out, "second")
        assert not a_res["second"][0], a_res           # refused
        assert "StaleFencingToken" in a_res["second"][1]
        a.wait(60)
    finally:
        for p in (a,):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
                p.wait()
    body = rgw.client().get_object(Bucket=bucket, Key="orders/obj")["Body"].read()
    assert body == b"worker-b 2"                       # B's data, A's zombie write never landed
    recs = requests.get(f"{gw.url}/_fencegate/v1/audit", params={"lock": "orders"},
                        timeout=10).json()["records"]
    assert [(r["kind"], r["token"], r["current_token"]) for r in recs] == \
        [("stale", first["token"], b_res["token"])]
