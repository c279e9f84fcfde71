#!/usr/bin/python3
"""One worker of the fault-injection test (a separate OS process, so SIGSTOP
is real).

    worker.py CONFIG.json WORKER_ID OUT.jsonl

It contends for one lock through the election API of a random gateway,
renews at a third of its lease, and while it believes it holds the lock it
writes objects under the lock's prefix (a few keys per lock, zero-length
bodies included) through a random gateway, each with X-Fencing-Token /
X-Fencing-Lock.  Between its lease bookkeeping and each write it "thinks"
for a while: that is where most of its time goes, so a SIGSTOP from the
nemesis usually lands between "I hold the lease" and the write, which is
exactly the zombie of a GC pause: it wakes and writes with its old token.

In bypass mode the writes go straight to RGW (signed with RGW's keys, the
epoch stamped by the worker itself), the election still goes through the
gateways: the same workload without the fence, which the checker must
catch.

Every write attempt is one JSONL line, written before the request ("intent")
and again with its outcome, so a worker stopped at any point leaves a record
of what it may have written.  Every value carries a unique id (vid) in its
metadata and its body.
"""

import json
import os
import random
import sys
import time

import requests

try:
    import botocore.auth
    import botocore.awsrequest
    import botocore.credentials
except ImportError:  # pragma: no cover - only bypass mode needs it
    botocore = None

FENCING_CODES = ("StaleFencingToken", "FencingTokenNotGranted", "FencingLeaseExpired")


def _never_connected(exc):
    """True when a requests exception means the TCP connection was never made
    (connection refused): urllib3's NewConnectionError somewhere in its chain."""
    seen = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if type(e).__name__ in ("NewConnectionError", "ConnectTimeoutError"):
            return True
        stack.extend([getattr(e, "reason", None), e.__cause__, e.__context__] +
                     [a for a in getattr(e, "args", ()) if isinstance(a, BaseException)])
    return False


def xml_field(text, name):
    a, b = f"<{name}>", f"</{name}>"
    if a in text and b in text:
        return text.split(a, 1)[1].split(b, 1)[0]
    return None


class Worker:
    def __init__(self, cfg, wid, out):
        self.cfg = cfg
        self.wid = wid
        self.out = open(out, "a", buffering=1)
        self.rng = random.Random(f"{cfg['seed']}-{wid}")
        self.lock = cfg["lock_of"][wid]
        self.keys = [f"{self.lock}/k{i}" for i in range(cfg["keys_per_lock"])]
        self.lease_ms = cfg["lease_ms"]
        self.sessions = {}
        self.seq = 0
        self.holding = None  # {"token", "lease_id", "renewed"}
        if cfg["mode"] == "bypass":
            self.creds = botocore.credentials.Credentials(cfg["rgw_access_key"],
                                                          cfg["rgw_secret_key"])

    # -- plumbing --

    def emit(self, rec):
        rec.setdefault("w", self.wid)
        rec.setdefault("t", time.time())
        self.out.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def session(self, url):
        s = self.sessions.get(url)
        if s is None:
            s = self.sessions[url] = requests.Session()
            s.trust_env = False
        return s

    def drop_session(self, url):
        s = self.sessions.pop(url, None)
        if s is not None:
            s.close()

    def gateway(self):
        i = self.rng.randrange(len(self.cfg["gateways"]))
        return i, self.cfg["gateways"][i]

    def stopping(self):
        return os.path.exists(self.cfg["stop_file"]) or time.time() > self.cfg["deadline"]

    # -- election --

    def api(self, path, body, timeout):
        gi, url = self.gateway()
        try:
            r = self.session(url).post(f"{url}/_fencegate/v1/locks/{self.lock}/{path}",
                                       json=body, timeout=timeout)
            return gi, r
        except requests.RequestException as e:
            self.drop_session(url)
            return gi, e

    def acquire(self):
        wait_ms = self.cfg["acquire_wait_ms"]
        t0 = time.monotonic()
        gi, r = self.api("acquire", {"holder": self.wid, "lease_ms": self.lease_ms,
                                     "wait_ms": wait_ms}, timeout=(3, wait_ms / 1000 + 10))
        if isinstance(r, Exception):
            self.emit({"ev": "acquire", "g": gi, "err": type(r).__name__})
            time.sleep(0.2)
            return
        if r.status_code == 200:
            j = r.json()
            self.holding = {"token": j["token"], "lease_id": j["lease_id"], "renewed": t0}
            self.emit({"ev": "acquire", "g": gi, "status": 200, "token": j["token"]})
        else:
            self.emit({"ev": "acquire", "g": gi, "status": r.status_code})
            time.sleep(0.05)

    def renew_if_due(self):
        h = self.holding
        if time.monotonic() - h["renewed"] < self.lease_ms / 3000.0:
            return
        t0 = time.monotonic()
        gi, r = self.api("renew", {"token": h["token"], "lease_id": h["lease_id"]},
                         timeout=(3, 10))
        if isinstance(r, Exception):
            self.emit({"ev": "renew", "g": gi, "token": h["token"], "err": type(r).__name__})
            return  # keep going: a worker that cannot tell is a zombie in the making
        self.emit({"ev": "renew", "g": gi, "token": h["token"], "status": r.status_code})
        if r.status_code == 200:
            h["renewed"] = t0
        elif r.status_code in (403, 404, 409, 410):
            self.holding = None  # superseded or lost: back to contending

    # -- writes --

    def body_for(self, vid):
        r = self.rng.random()
        if r < self.cfg["p_empty"]:
            return b""
        n = self.rng.randint(64, 2048) if r < 0.75 else self.rng.randint(64 * 1024, 320 * 1024)
        line = (vid + "\n").encode()
        return (line * (n // len(line) + 1))[:max(n, len(line))]

    def write(self):
        token = self.holding["token"]
        key = self.rng.choice(self.keys)
        self.seq += 1
        vid = f"{self.wid}.{self.seq}.{self.rng.getrandbits(32):08x}"
        body = self.body_for(vid)
        bucket = self.cfg["bucket"]
        headers = {"x-amz-meta-fg-vid": vid, "x-amz-meta-fg-epoch": str(token),
                   "x-amz-meta-fg-worker": self.wid, "Content-Type": "application/octet-stream"}
        if self.cfg["mode"] == "bypass":
            gi, url = -1, self.cfg["rgw_endpoint"]
            headers["x-amz-meta-fencing-epoch"] = str(token)
        else:
            gi, url = self.gateway()
            headers["X-Fencing-Token"] = str(token)
            headers["X-Fencing-Lock"] = self.lock
        target = f"{url}/{bucket}/{key}"
        if self.cfg["mode"] == "bypass":
            req = botocore.awsrequest.AWSRequest(method="PUT", url=target, data=body,
                                                 headers=headers)
            botocore.auth.S3SigV4Auth(self.creds, "s3", "us-east-1").add_auth(req)
            headers = dict(req.prepare().headers)
        base = {"ev": "write", "vid": vid, "lock": self.lock, "key": key, "epoch": token,
                "size": len(body), "g": gi}
        self.emit(dict(base, phase="intent"))
        t0 = time.time()
        try:
            r = self.session(url).put(target, data=body, headers=headers,
                                      timeout=(3, self.cfg["write_timeout_s"]))
        except requests.RequestException as e:
            self.drop_session(url)
            # A refused connection never carried the request: it cannot be
            # stored.  Anything else (reset, timeout) may have been.
            notsent = isinstance(e, requests.ConnectionError) and _never_connected(e)
            self.emit(dict(base, phase="done", t0=t0, outcome="notsent" if notsent else "unknown",
                           err=type(e).__name__))
            return
        code = xml_field(r.text, "Code") if r.status_code >= 300 else None
        rec = dict(base, phase="done", t0=t0, status=r.status_code, code=code,
                   request_id=xml_field(r.text, "RequestId") if code else
                   r.headers.get("x-amz-request-id"),
                   version_id=r.headers.get("x-amz-version-id"),
                   current=r.headers.get("X-Fencing-Current-Token"))
        if 200 <= r.status_code < 300:
            rec["outcome"] = "acked"
        elif 400 <= r.status_code < 500 or r.status_code == 503:
            rec["outcome"] = "refused"
        else:
            rec["outcome"] = "unknown"  # 500/502/504: the upstream may have it
        self.emit(rec)
        if code in FENCING_CODES:
            # A refused leader stops writing and contends again, as a real one would.
            self.holding = None

    def think(self):
        lo, hi = self.cfg["think_ms"]
        time.sleep(self.rng.uniform(lo, hi) / 1000.0)

    def run(self):
        self.emit({"ev": "start", "pid": os.getpid(), "lock": self.lock})
        while not self.stopping():
            if self.holding is None:
                self.acquire()
                continue
            self.renew_if_due()
            # A batch of 1-3 writes per look at the lease, each after some
            # thinking: a SIGSTOP usually lands in a think, between the lease
            # check and a write, and the rest of the batch is a zombie's.
            for _ in range(self.rng.randint(1, 3)):
                if self.holding is None or self.stopping():
                    break
                self.think()
                self.write()
        if self.holding is not None:
            h = self.holding
            self.api("release", {"token": h["token"], "lease_id": h["lease_id"]}, timeout=(3, 10))
        self.emit({"ev": "stop"})


def main():
    cfg_path, wid, out = sys.argv[1:4]
    with open(cfg_path) as f:
        cfg = json.load(f)
    Worker(cfg, wid, out).run()


if __name__ == "__main__":
    main()
