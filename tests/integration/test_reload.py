"""SIGHUP reloads the upstream credentials once, for everything the gateway
signs: forwarded requests, the s3 election backend and the checksum-trailer
probe share one signer (gateway/s3client/s3client.c).

The gateway starts with a wrong upstream secret: RGW refuses what it forwards
(403 SignatureDoesNotMatch), the election cannot pass its start-up self-test
(no lock is granted) and the trailer probe gets no answer.  After the config
is rewritten with the right secret and SIGHUP, all three work, without a
restart."""

import json
import os
import signal
import time

import requests

UNTIL = 30  # s: the election's self-test and the trailer probe retry with a backoff


def wait_for(what, fn, timeout=UNTIL):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_sighup_reloads_the_one_signer(gateway, rgw, bucket):
    locks = bucket + "-locks"
    rgw.client().create_bucket(Bucket=locks)
    rgw.client().put_object(Bucket=bucket, Key="r/obj", Body=b"payload")
    gw = gateway({"upstream": {"secret_key_env": "FG_SK_NOW"},
                  "election": {"backend": "s3", "bucket": locks, "prefix": "fencegate/",
                               "min_lease_ms": 3150}},
                 env={"FG_SK_NOW": "not-the-upstream-secret", "FG_SK_LATER": rgw.secret_key})
    r = requests.get(f"{gw.url}/{bucket}/r/obj", timeout=10)
    assert r.status_code == 403 and b"SignatureDoesNotMatch" in r.content, r.content
    r = requests.post(f"{gw.url}/_fencegate/v1/locks/reload/acquire", json={"holder": "w"},
                      timeout=10)
    assert r.status_code != 200, r.text
    assert "aws-chunked checksum trailers" not in gw.log()

    gw.config["upstream"]["secret_key_env"] = "FG_SK_LATER"
    gw.config_path.write_text(json.dumps(gw.config, indent=2) + "\n")
    os.kill(gw.pid, signal.SIGHUP)
    wait_for("reloaded", lambda: "configuration reloaded" in gw.log())

    r = requests.get(f"{gw.url}/{bucket}/r/obj", timeout=10)
    assert r.status_code == 200 and r.content == b"payload", r.content

    def acquired():
        a = requests.post(f"{gw.url}/_fencegate/v1/locks/reload/acquire", json={"holder": "w"},
                          timeout=10)
        return a.status_code == 200 and a.json()
    got = wait_for("the election grants with the new secret", acquired)
    assert got["token"] >= 1
    wait_for("the trailer probe answered",
             lambda: "upstream does not take aws-chunked checksum trailers" in gw.log())
    assert "gw_s3client_set_config" not in gw.log()  # no "keeping the old upstream"
