"""A worker process for test_worker_python.py, run by the python of the venv
that `make py-client` installed fencegate into (FENCEGATE_PYVENV), so it uses
the installed package, never the source tree.

    python py_worker.py MODE CONFIG_JSON

Every event is one JSON line appended (and flushed) to config["out"], with
"t" on the monotonic clock (CLOCK_MONOTONIC, comparable across processes on
one machine).  The JSON API is signed through botocore's credential chain:
the test puts a principal's keys in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY,
or none (plain requests)."""

import io
import json
import os
import signal
import sys
import threading
import time

import boto3
import botocore.config
import requests

import fencegate

MODE = sys.argv[1]
CFG = json.loads(sys.argv[2])
OUT = open(CFG["out"], "a", buffering=1)
_out_lock = threading.Lock()


def event(ev, **kw):
    with _out_lock:
        OUT.write(json.dumps(dict(ev=ev, t=time.monotonic(), pid=os.getpid(), **kw)) + "\n")
        OUT.flush()


def s3(retries=5):
    return boto3.session.Session().client(
        "s3", endpoint_url=CFG["s3_url"], aws_access_key_id=CFG["s3_ak"],
        aws_secret_access_key=CFG["s3_sk"], region_name="us-east-1",
        config=botocore.config.Config(signature_version="s3v4",
                                      s3={"addressing_style": "path"},
                                      retries={"mode": "standard",
                                               "total_max_attempts": retries},
                                      connect_timeout=5, read_timeout=30))


def gateway():
    return fencegate.Gateway(CFG["api_url"])  # botocore's chain: a principal or nothing


def outcome(fn):
    """("ok", None) or (exception class name, its reason/code)."""
    try:
        fn()
        return "ok", None
    except fencegate.LeaseLost as e:
        return "LeaseLost", e.reason
    except Exception as e:  # noqa: BLE001
        code = getattr(e, "response", {}).get("Error", {}).get("Code")
        return type(e).__name__, code or repr(e)[:200]


def wait_file(path):
    while not os.path.exists(path):
        time.sleep(0.01)


class HalfThenWait(io.RawIOBase):
    """A body that, once botocore is sending it (not hashing it), stops at
    half way, says so in a marker file and waits for a go file: a write
    caught in flight by the SIGSTOP that follows."""

    def __init__(self, size, marker, go):
        self.data = b"Z" * size
        self.pos = 0
        self.sending = False
        self.marker, self.go = marker, go

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, off, whence=0):
        self.pos = [off, self.pos + off, len(self.data) + off][whence]
        return self.pos

    def tell(self):
        return self.pos

    def readinto(self, b):
        if self.sending and self.pos >= len(self.data) // 2 and not os.path.exists(self.go):
            open(self.marker, "w").close()
            wait_file(self.go)
        n = min(len(b), len(self.data) - self.pos, 65536)
        b[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


def zombie():
    """Acquire, write, start a big write that the test freezes half sent,
    then report what the library said on waking and try one more write."""
    c = s3()
    lease = gateway().lease("orders", lease_ms=CFG["lease_ms"], wait_ms=20000)
    lease.attach(c)
    fired = threading.Event()   # see unreachable
    lease.on_lost(lambda l: (event("lost", reason=l.reason), fired.set()))
    event("granted", token=lease.token)
    c.put_object(Bucket=CFG["bucket"], Key="orders/obj", Body=b"worker-a 1")
    event("wrote", n=1)
    body = HalfThenWait(4 << 20, CFG["marker"], CFG["go"])
    c.meta.events.register("before-send.s3.PutObject",
                           lambda **kw: setattr(body, "sending", True))
    res = outcome(lambda: c.put_object(Bucket=CFG["bucket"], Key="orders/inflight",
                                       Body=body, ContentLength=len(body.data)))
    event("inflight_done", result=res, lost=lease.lost.is_set(), reason=lease.reason)
    if lease.lost.is_set() and not fired.wait(5):
        event("crash", error="on_lost's callback did not run within 5 s of the loss")
    event("write2_attempt")
    res = outcome(lambda: c.put_object(Bucket=CFG["bucket"], Key="orders/obj",
                                       Body=b"worker-a 2"))
    event("write2_done", result=res)


def writer():
    """Worker B: acquire (waiting), write its bytes, release."""
    c = s3()
    with gateway().lease("orders", lease_ms=CFG["lease_ms"], wait_ms=30000) as lease:
        lease.attach(c)
        event("granted", token=lease.token)
        c.put_object(Bucket=CFG["bucket"], Key="orders/obj", Body=b"worker-b 1")
        event("wrote", n=1)


def steady():
    """Write every lease/5 for CFG["durations"] lease durations."""
    c = s3()
    with gateway().lease("orders", lease_ms=CFG["lease_ms"], wait_ms=20000) as lease:
        lease.attach(c)
        event("granted", token=lease.token)
        end = time.monotonic() + CFG["durations"] * CFG["lease_ms"] / 1000
        n = 0
        while time.monotonic() < end:
            n += 1
            res = outcome(lambda: c.put_object(Bucket=CFG["bucket"], Key=f"orders/s{n % 4}",
                                               Body=f"{n}".encode()))
            if res[0] != "ok":
                event("write_failed", n=n, result=res)
                break
            time.sleep(CFG["lease_ms"] / 5000)
        event("done", writes=n, lost=lease.lost.is_set(), reason=lease.reason,
              renewals=lease.renewals)


def elect():
    """gw.elect until SIGTERM; while leading, write a heartbeat every lease/4."""
    c = s3()
    stop = threading.Event()

    def on_term(*_):
        stop.set()
        election = holder[0]
        if election is not None:
            threading.Thread(target=election.stop).start()

    holder = [None]
    signal.signal(signal.SIGTERM, on_term)

    def run(lease):
        with lease.attach(c):
            n = 0
            while not lease.lost.is_set():
                n += 1
                res = outcome(lambda: c.put_object(Bucket=CFG["bucket"], Key="orders/leader",
                                                   Body=f"{CFG['holder']} {n}".encode()))
                event("beat", token=lease.token, result=res)
                lease.lost.wait(CFG["lease_ms"] / 4000)
        event("run_returned", token=lease.token, reason=lease.reason)

    gw = gateway()
    holder[0] = gw.elect("orders", run, holder=CFG["holder"], lease_ms=CFG["lease_ms"],
                         on_started=lambda l: event("started", token=l.token),
                         on_stopped=lambda: event("stopped"),
                         on_new_leader=lambda h: event("new_leader", holder=h),
                         stop=stop, block=False)
    event("campaigning")
    while not stop.is_set():
        stop.wait(0.1)
    holder[0].join(10)
    event("exit")


def unreachable():
    """A lease through the test's relay; report the deadline as it moves,
    then the loss, then one write after it."""
    c = s3()
    lease = gateway().lease("orders", lease_ms=CFG["lease_ms"], wait_ms=20000)
    lease.attach(c)
    event("granted", token=lease.token)
    fired = threading.Event()   # callbacks run after lost is set: wait for it
    lease.on_lost(lambda l: (event("lost", reason=l.reason), fired.set()))
    c.put_object(Bucket=CFG["bucket"], Key="orders/u", Body=b"before")
    last = None
    while not lease.lost.is_set():
        d = round(time.monotonic() + lease.remaining(), 3)
        if d != last and not lease.lost.is_set():
            event("deadline", at=d)
            last = d
        time.sleep(0.02)
    if not fired.wait(5):
        event("crash", error="on_lost's callback did not run within 5 s of the loss")
    event("after_loss_attempt")
    event("after_loss", result=outcome(lambda: c.put_object(
        Bucket=CFG["bucket"], Key="orders/u", Body=b"after")))


def watch():
    """gw.watch until SIGTERM: every change of the lock's holder, token or
    liveness, as the long poll reports it."""
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    for doc in gateway().watch("orders", wait_ms=2000):
        event("seen", token=doc.get("token"), holder=doc.get("holder"), live=doc.get("live"))


def signed_get(path):
    """GET a gateway path, signed like the library does when there are keys."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    import botocore.session
    url = CFG["s3_url"] + path
    creds = botocore.session.get_session().get_credentials()
    if creds is None:
        return requests.get(url, timeout=10)
    req = AWSRequest(method="GET", url=url)
    req.headers["X-Amz-Content-SHA256"] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    return requests.get(url, headers=dict(req.headers), timeout=10)


def rejections():
    """The fence's refusals so far: fencegate_fence_refusals_total summed over lock and code."""
    text = signed_get("/metrics").text
    if "# TYPE fencegate_fence_refusals_total counter" not in text:
        raise AssertionError("no fencegate_fence_refusals_total in /metrics")
    return sum(int(float(line.split()[-1])) for line in text.splitlines()
               if line.startswith("fencegate_fence_refusals_total{"))


def tokens():
    """Tokens on every kind of write, then each fencing refusal once."""
    from boto3.s3.transfer import TransferConfig
    b = CFG["bucket"]
    gw = gateway()
    c = s3()
    lease = gw.lease("orders", lease_ms=30000, wait_ms=20000)
    lease.attach(c)
    event("granted", token=lease.token)
    steps = {}
    steps["put"] = outcome(lambda: c.put_object(Bucket=b, Key="orders/p", Body=b"p"))
    steps["copy"] = outcome(lambda: c.copy_object(Bucket=b, Key="orders/c",
                                                  CopySource={"Bucket": b, "Key": "orders/p"}))
    steps["delete"] = outcome(lambda: c.delete_object(Bucket=b, Key="orders/c"))
    c.put_object(Bucket=b, Key="orders/d1", Body=b"1")
    c.put_object(Bucket=b, Key="orders/d2", Body=b"2")
    steps["delete_objects"] = outcome(lambda: c.delete_objects(
        Bucket=b, Delete={"Objects": [{"Key": "orders/d1"}, {"Key": "orders/d2"}]}))
    big = io.BytesIO(os.urandom(64 << 20))
    steps["multipart"] = outcome(lambda: c.upload_fileobj(
        big, b, "orders/big", Config=TransferConfig(multipart_threshold=8 << 20,
                                                    multipart_chunksize=8 << 20,
                                                    max_concurrency=4)))
    event("writes", steps=steps, token=lease.token)

    # Each refusal, from a client that retries (standard mode, 5 attempts).
    refusals = {}

    def refused(name, fn, le):
        """fn's refusal, counted at the gateway, and what it did to le:
        ["held"] or ["lost", reason, what the next write raised]."""
        before = rejections()
        res = outcome(fn)
        time.sleep(0.1)
        after = ["held"]
        if le.lost.is_set():
            after = ["lost", le.reason, outcome(fn)[0]]
        refusals[name] = {"result": res, "counted": rejections() - before, "lease": after}

    api = lease._api
    def release_behind_its_back(le):  # the gateway ends it; the library does not know yet
        st, _ = api.call("POST", "/locks/orders/release",
                         {"token": le.token, "lease_id": le._lease_id}, timeout=5)
        assert st == 200, st

    release_behind_its_back(lease)
    newer = gw.lease("orders", lease_ms=30000, wait_ms=20000)
    c2 = s3()
    newer.attach(c2)
    c2.put_object(Bucket=b, Key="orders/newer", Body=b"n")
    refused("StaleFencingToken", lambda: c.put_object(Bucket=b, Key="orders/p", Body=b"old"),
            lease)

    release_behind_its_back(newer)
    refused("FencingLeaseExpired", lambda: c2.put_object(Bucket=b, Key="orders/p", Body=b"x"),
            newer)

    third = gw.lease("orders", lease_ms=30000, wait_ms=20000)
    c3 = s3()
    third.attach(c3)
    third.token += 100  # a token nobody granted (test only: tokens come from the gateway)
    refused("FencingTokenNotGranted", lambda: c3.put_object(Bucket=b, Key="orders/p", Body=b"x"),
            third)
    third.token -= 100

    rgw = boto3.session.Session().client(
        "s3", endpoint_url=CFG["rgw_url"], aws_access_key_id=CFG["rgw_ak"],
        aws_secret_access_key=CFG["rgw_sk"], region_name="us-east-1",
        config=botocore.config.Config(s3={"addressing_style": "path"}))
    up = rgw.create_multipart_upload(Bucket=b, Key="orders/unseen")["UploadId"]
    refused("MissingFencingToken", lambda: c3.upload_part(Bucket=b, Key="orders/unseen",
                                                         UploadId=up, PartNumber=1, Body=b"x"),
            third)
    rgw.abort_multipart_upload(Bucket=b, Key="orders/unseen", UploadId=up)
    event("refusals", refusals=refusals)
    for le in (lease, newer, third):
        le.release()


if __name__ == "__main__":
    event("start", mode=MODE, fencegate=fencegate.__file__)
    try:
        globals()[MODE]()
    except Exception:  # noqa: BLE001
        import traceback
        event("crash", error=traceback.format_exc())
        raise
    event("end")
