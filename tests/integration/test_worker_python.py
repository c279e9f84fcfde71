"""The Python worker library (clients/python) against the real gateway and
RGW, each test with principals (SigV4 on the JSON API, through botocore's
credential chain) and without, but the two long ones (steady writing, three
electors), which run with principals only.  Workers are separate processes run by the
python of the venv `make py-client` installed the package into
(FENCEGATE_PYVENV; tests/integration/py_worker.py), so what is tested is the
installed package.

* a worker SIGSTOPped past its lease with a write half sent; a second worker
  takes the lock and writes; on waking the first reports the loss (with its
  reason) before its next write is sent, the half-sent write is refused at
  the gateway and nothing of it is at RGW, which holds the second's bytes;
* a lease kept through 6 lease durations of steady writing;
* three processes running elect: one leader at a time by the gateway's
  grants and the workers' own reports; after a kill -9 of the leader a new
  one leads within lease + 1 s; on SIGTERM each stops, on_stopped only
  after on_started; a fourth process's gw.watch sees each leadership;
* the JSON API blackholed by a relay: the lease is lost at its local
  deadline (reason unreachable), and the next write is not sent;
* tokens on PutObject, CopyObject, DeleteObject, DeleteObjects and a 64 MiB
  multipart upload; each fencing refusal raised as its typed error once,
  with botocore's retries on, counted at the gateway (/metrics); a refusal
  of the lease's own token loses the lease before it is raised.
* the README's Python worker, as printed there, against both.
"""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests
from botocore.exceptions import ClientError

from relay import BlackholeRelay

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORKER = HERE / "py_worker.py"
AK, SK = "AKIDWORKERPY", "worker-py-secret-key"
LEASE_MS = 1500


def venv_python():
    venv = os.environ.get("FENCEGATE_PYVENV") or str(REPO / "build" / "pyvenv")
    py = Path(venv) / "bin" / "python"
    if not py.exists():
        pytest.fail(f"{py} missing: run `make py-client` (or set FENCEGATE_PYVENV)")
    return str(py)


class Setup:
    """A gateway with a fence on orders/, with or without a principal."""

    def __init__(self, gw, rgw, bucket, tmp, principals):
        self.gw, self.rgw, self.bucket, self.tmp = gw, rgw, bucket, tmp
        self.principals = principals
        self.procs = []
        self.n = 0

    def env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "PYTHON"))}
        env["AWS_EC2_METADATA_DISABLED"] = "true"
        env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
        if self.principals:
            env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = AK, SK
        return env

    def config(self, **kw):
        self.n += 1
        cfg = dict(api_url=self.gw.url, s3_url=self.gw.url, bucket=self.bucket,
                   s3_ak=AK if self.principals else self.rgw.access_key,
                   s3_sk=SK if self.principals else self.rgw.secret_key,
                   rgw_url=self.rgw.endpoint, rgw_ak=self.rgw.access_key,
                   rgw_sk=self.rgw.secret_key, lease_ms=LEASE_MS,
                   out=str(self.tmp / f"w{self.n}.jsonl"))
        cfg.update(kw)
        return cfg

    def argv(self, mode, cfg):
        """The worker's command line (a subclass runs another language's)."""
        return [venv_python(), str(WORKER), mode, json.dumps(cfg)]

    def start(self, mode, **kw):
        cfg = self.config(**kw)
        p = subprocess.Popen(self.argv(mode, cfg), env=self.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        p.cfg = cfg
        self.procs.append(p)
        return p

    def events(self, p):
        try:
            lines = Path(p.cfg["out"]).read_text().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(x) for x in lines if x.endswith("}")]

    def wait_event(self, p, ev, timeout=30, n=1):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            hits = [e for e in self.events(p) if e["ev"] == ev]
            if len(hits) >= n:
                return hits[n - 1]
            crash = [e for e in self.events(p) if e["ev"] == "crash"]
            assert not crash, crash[0]["error"]
            if p.poll() is not None and p.returncode != 0:
                break
            time.sleep(0.02)
        out = p.stdout.read().decode(errors="replace") if p.poll() is not None else ""
        raise AssertionError(f"no {ev!r} from worker: {self.events(p)}\n{out}")

    def finish(self, p, timeout=60):
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise
        out = p.stdout.read().decode(errors="replace")
        assert p.returncode == 0, out + str(self.events(p))
        return self.events(p)

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    p.kill()
                except ProcessLookupError:
                    pass
                p.wait(10)

    def api_get(self, path, **params):
        """A GET on the gateway's own API (signed by botocore when principals)."""
        url = self.gw.url + path
        if params:
            url += "?" + "&".join(f"{k}={v}" for k, v in params.items())
        if not self.principals:
            return requests.get(url, timeout=10)
        import hashlib
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        req = AWSRequest(method="GET", url=url,
                         headers={"x-amz-content-sha256": hashlib.sha256(b"").hexdigest()})
        S3SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
        return requests.get(url, headers=dict(req.headers), timeout=10)

    def audit(self):
        r = self.api_get("/_fencegate/v1/audit", lock="orders", limit=1000)
        assert r.status_code == 200, r.text
        return r.json()["records"]

    def rgw_body(self, key):
        try:
            return self.rgw.client().get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError:
            return None

    def grants(self):
        """(epoch, holder) of every grant, from the gateway's log."""
        return [(int(m.group(1)), m.group(2)) for m in
                re.finditer(r"lock orders granted: epoch (\d+) to (\S+)", self.gw.log())]


def worker_setup(cls, request, gateway, rgw, bucket, tmp_path):
    """A gateway fencing orders/ for the workers' tests, with a principal
    when request.param is "principals"; a `cls` (Setup or a subclass that
    starts another language's worker) around it."""
    principals = request.param == "principals"
    # min_body_rate off: the SIGSTOPped worker's half-sent body must be cut
    # by the fence (B's write), not by the slow-body rule if the pause runs
    # long on a loaded machine.
    cfg = {"election": {"backend": "dir", "path": str(tmp_path / "locks"),
                        "default_lease_ms": LEASE_MS, "min_lease_ms": 200},
           "limits": {"min_body_rate": 0},
           "fences": [{"bucket": bucket, "prefix": "orders/", "lock": "orders",
                       "require_token": True}]}
    if principals:
        cfg["principals"] = [{"name": "worker", "access_key": AK, "secret_key": SK}]
    gw = gateway(cfg)
    deadline = time.monotonic() + 20
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline, "gateway not ready"
        time.sleep(0.05)
    return cls(gw, rgw, bucket, tmp_path, principals)


@pytest.fixture(params=["plain", "principals"])
def setup(request, gateway, rgw, bucket, tmp_path):
    s = worker_setup(Setup, request, gateway, rgw, bucket, tmp_path)
    yield s
    s.stop_all()


@pytest.mark.slow  # timing-bound (short leases): not under sanitizers
def test_sigstop_past_the_lease(setup):
    s = setup
    marker, go = s.tmp / "inflight", s.tmp / "go"
    a = s.start("zombie", marker=str(marker), go=str(go))
    first = s.wait_event(a, "granted")
    s.wait_event(a, "wrote")
    deadline = time.monotonic() + 30
    while not marker.exists():                       # its big write is half sent
        assert time.monotonic() < deadline and a.poll() is None, s.events(a)
        time.sleep(0.01)
    os.kill(a.pid, signal.SIGSTOP)                   # a long GC pause, mid-write
    try:
        time.sleep(LEASE_MS / 1000 + 0.2)
        b = s.start("writer", lease_ms=30000)
        b_events = s.finish(b)
        b_tok = [e for e in b_events if e["ev"] == "granted"][0]["token"]
        assert b_tok > first["token"]
        go.touch()
    finally:
        os.kill(a.pid, signal.SIGCONT)               # A wakes up, "still the leader"
    ev = s.finish(a)
    names = [e["ev"] for e in ev]
    lost = [e for e in ev if e["ev"] == "lost"]
    assert len(lost) == 1 and lost[0]["reason"] == "expired", ev
    # the loss was reported before the next write was attempted, and that
    # write was refused by the library, so never sent
    assert names.index("lost") < names.index("write2_attempt"), names
    w2 = [e for e in ev if e["ev"] == "write2_done"][0]["result"]
    assert w2 == ["LeaseLost", "expired"], w2
    # the write caught in flight: refused at the gateway, nothing at RGW
    inflight = [e for e in ev if e["ev"] == "inflight_done"][0]
    assert inflight["result"] == ["StaleFencingToken", "StaleFencingToken"], inflight
    assert inflight["lost"] is True and inflight["reason"] == "expired"
    recs = s.audit()           # A's only request the gateway saw after the pause, once
    assert [(r["kind"], r["token"], r["current_token"], r["key"]) for r in recs] == \
        [("cut", first["token"], b_tok, "orders/inflight")], recs
    assert s.rgw_body("orders/inflight") is None
    assert s.rgw_body("orders/obj") == b"worker-b 1"


@pytest.mark.slow  # timing-bound (short leases): not under sanitizers
# one mode (principals): it times renewals and hand-overs over several leases,
# which the shorter tests cover in both modes
@pytest.mark.parametrize("setup", ["principals"], indirect=True)
def test_lease_kept_through_steady_writing(setup):
    s = setup
    w = s.start("steady", durations=6)
    ev = s.finish(w, timeout=60)
    done = [e for e in ev if e["ev"] == "done"][0]
    assert not [e for e in ev if e["ev"] == "write_failed"], ev
    assert done["lost"] is False and done["reason"] is None
    assert done["writes"] >= 10          # one every lease/5, whatever a loaded machine allows
    assert done["renewals"] >= 12        # a third of the lease: 3 per lease, 6 leases
    assert len(s.grants()) == 1          # one grant, kept by renewals


@pytest.mark.slow  # timing-bound (short leases): not under sanitizers
# one mode (principals): it times renewals and hand-overs over several leases,
# which the shorter tests cover in both modes
@pytest.mark.parametrize("setup", ["principals"], indirect=True)
def test_three_electors_one_leader_and_kill9(setup):
    s = setup
    watcher = s.start("watch")
    s.wait_event(watcher, "start")
    ws = [s.start("elect", holder=f"elector-{i}") for i in range(3)]
    first = None
    deadline = time.monotonic() + 20
    while first is None and time.monotonic() < deadline:
        for w in ws:
            started = [e for e in s.events(w) if e["ev"] == "started"]
            if started:
                first = (w, started[0])
        time.sleep(0.05)
    assert first is not None, [s.events(w) for w in ws]
    time.sleep(3 * LEASE_MS / 1000)                  # steady leadership for 3 leases
    leader, started = first
    assert [e["ev"] for e in s.events(leader)].count("started") == 1
    for w in ws:
        if w is not leader:
            assert "started" not in [e["ev"] for e in s.events(w)]
    os.kill(leader.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    leader.wait()
    nxt = None
    deadline = time.monotonic() + LEASE_MS / 1000 + 5
    while nxt is None and time.monotonic() < deadline:
        for w in ws:
            if w is not leader:
                st = [e for e in s.events(w) if e["ev"] == "started"]
                if st:
                    nxt = (w, st[0])
        time.sleep(0.02)
    assert nxt is not None
    assert nxt[1]["t"] - killed_at <= LEASE_MS / 1000 + 1.0, nxt[1]["t"] - killed_at
    assert nxt[1]["token"] > started["token"]
    time.sleep(2 * LEASE_MS / 1000)                  # and it leads: steadily, writing
    ev = s.events(nxt[0])
    assert [e["ev"] for e in ev].count("started") == 1, ev
    assert [e for e in ev if e["ev"] == "beat" and e["token"] == nxt[1]["token"]
            and e["result"] == ["ok", None]], ev
    assert not [e for e in ev if e["ev"] == "run_returned"], ev
    for w in ws:
        if w.poll() is None:
            w.send_signal(signal.SIGTERM)
    for w in ws:
        if w is not leader:
            s.finish(w, timeout=20)
    # One leader at a time: the leaders' intervals (started .. run_returned,
    # or the kill) do not overlap, their tokens rise, and they are exactly
    # the gateway's grants, in order.
    intervals = []
    for w in ws:
        ev = s.events(w)
        for e in ev:
            if e["ev"] == "started":
                end = [x["t"] for x in ev if x["ev"] == "run_returned"
                       and x["token"] == e["token"]]
                intervals.append((e["t"], end[0] if end else killed_at, e["token"],
                                  w.cfg["holder"]))
        # on_stopped only after on_started, one for one
        seq = [e["ev"] for e in ev if e["ev"] in ("started", "stopped")]
        assert seq == ["started", "stopped"] * (len(seq) // 2) + (["started"] if w is leader
                                                                  and seq else []) or \
            seq == ["started", "stopped"] * (len(seq) // 2), (w.cfg["holder"], seq)
        beats = [e for e in ev if e["ev"] == "beat"]
        assert all(b["result"] == ["ok", None] or b["result"][0] == "LeaseLost"
                   for b in beats), beats
    intervals.sort()
    for (s1, e1, t1, _), (s2, e2, t2, _) in zip(intervals, intervals[1:]):
        assert e1 <= s2, intervals
        assert t1 < t2
    # The gateway granted exactly these leaderships, in order; a grant after
    # the SIGTERMs may have been given back unused by an elector told to stop.
    grants = s.grants()
    led = [(t, h) for _, _, t, h in intervals]
    assert grants[:len(led)] == led, (led, grants)
    assert len(grants) - len(led) <= 2, (led, grants)
    # gw.watch saw both long leaderships as they began, on the long poll
    watcher.send_signal(signal.SIGTERM)
    seen = [(e["token"], e["holder"]) for e in s.finish(watcher) if e["ev"] == "seen"
            and e["live"]]
    for tok, holder in ((started["token"], leader.cfg["holder"]),
                        (nxt[1]["token"], nxt[0].cfg["holder"])):
        assert (tok, holder) in seen, (tok, holder, seen)
    assert [t for t, _ in seen] == sorted(t for t, _ in seen), seen
    # leaders' beats landed at RGW as the last leader's
    assert s.rgw_body("orders/leader").startswith(b"elector-")


@pytest.mark.slow  # timing-bound (short leases): not under sanitizers
def test_unreachable_lost_at_the_local_deadline(setup):
    s = setup
    relay = BlackholeRelay(s.gw.port)
    try:
        w = s.start("unreachable", api_url=relay.url)
        s.wait_event(w, "granted")
        s.wait_event(w, "deadline", n=3)             # renewals move it
        relay.blackhole()
        cut = time.monotonic()
        lost = s.wait_event(w, "lost", timeout=10)
        ev = s.finish(w, timeout=20)
    finally:
        relay.close()
    deadlines = [e for e in ev if e["ev"] == "deadline" and e["t"] < lost["t"]]
    last = deadlines[-1]["at"]
    assert lost["reason"] == "unreachable"
    assert abs(lost["t"] - last) < 0.25, (lost["t"], last)   # at its local deadline
    assert lost["t"] - cut <= LEASE_MS / 1000 + 0.25           # within a lease of the cut
    after = [e for e in ev if e["ev"] == "after_loss"][0]["result"]
    assert after == ["LeaseLost", "unreachable"]
    assert s.rgw_body("orders/u") == b"before"                 # the late write never left
    assert not s.audit()


@pytest.mark.slow  # timing-bound (short leases): not under sanitizers
@pytest.mark.parametrize("setup", ["plain"], indirect=True)  # every caller may revoke
def test_revoked_lease_lost_at_the_next_renewal(setup):
    """An operator revokes the lease: the worker's next renewal is answered
    409 superseded with its own token, so the lease is lost then (reason
    expired), well before its local deadline; the next write raises
    LeaseLost unsent."""
    s = setup
    w = s.start("unreachable")
    s.wait_event(w, "granted")
    s.wait_event(w, "deadline", n=3)             # renewals move it
    t_rev = time.monotonic()
    r = requests.post(f"{s.gw.url}/_fencegate/v1/locks/orders/revoke", json={}, timeout=10)
    assert r.status_code == 200 and r.json()["released"] is True, r.text
    lost = s.wait_event(w, "lost", timeout=10)
    ev = s.finish(w, timeout=20)
    deadlines = [e for e in ev if e["ev"] == "deadline" and e["t"] < lost["t"]]
    assert lost["reason"] == "expired"
    # renewals go every third of a lease; the deadline was two thirds or more away
    assert lost["t"] - t_rev < LEASE_MS / 1000 * 0.6, (lost["t"] - t_rev)
    assert lost["t"] < deadlines[-1]["at"] - 0.2, (lost["t"], deadlines[-1])
    after = [e for e in ev if e["ev"] == "after_loss"][0]["result"]
    assert after == ["LeaseLost", "expired"]
    assert s.rgw_body("orders/u") == b"before"


def test_tokens_on_every_write_and_typed_refusals_once(setup):
    s = setup
    w = s.start("tokens")
    ev = s.finish(w, timeout=180)
    writes = [e for e in ev if e["ev"] == "writes"][0]
    assert writes["steps"] == {k: ["ok", None] for k in
                               ("put", "copy", "delete", "delete_objects", "multipart")}, writes
    r = s.rgw.client().head_object(Bucket=s.bucket, Key="orders/big")
    assert r["ContentLength"] == 64 << 20 and "-" in r["ETag"]       # multipart at RGW
    refusals = [e for e in ev if e["ev"] == "refusals"][0]["refusals"]
    # a refusal of the lease's own token loses it, and the next write is
    # refused by the library, unsent (counted stays 1); a token the gateway
    # never granted, or a part without one, leaves the lease held
    after = {"StaleFencingToken": ["lost", "superseded", "LeaseLost"],
             "FencingLeaseExpired": ["lost", "expired", "LeaseLost"],
             "FencingTokenNotGranted": ["held"], "MissingFencingToken": ["held"]}
    for code, lease in after.items():
        assert refusals[code] == {"result": [code, code], "counted": 1, "lease": lease}, \
            (code, refusals)
    kinds = [r["kind"] for r in s.audit()]
    assert len(kinds) == 4, kinds


def readme_example():
    text = (REPO / "README.md").read_text()
    m = re.search(r"### Python\n.*?```python\n(.*?)```", text, re.S)
    assert m, "README: no ```python block under ### Python"
    return m.group(1)


def test_readme_example_is_examples_worker():
    assert readme_example() == (REPO / "clients/python/examples/worker.py").read_text()


@pytest.mark.slow  # timing-bound (short leases): not under sanitizers
def test_readme_worker_runs(setup):
    """The README's worker, as printed: acquires, writes, survives a pause
    (SIGSTOP past its lease), stops on SIGTERM."""
    script = setup.tmp / "readme_worker.py"
    script.write_text(readme_example())
    run_readme_worker(setup, [venv_python(), "-u", str(script)])


def run_readme_worker(s, argv):
    """Runs a README worker (argv) against s: it must write, report the
    loss of its lease after a SIGSTOP past it, write again with a newer
    token, and stop on SIGTERM, printing "stopped"."""
    env = s.env()
    env.update(FENCEGATE_URL=s.gw.url, BUCKET=s.bucket, LOCK="orders", LEASE_MS=str(LEASE_MS),
               S3_ACCESS_KEY=AK if s.principals else s.rgw.access_key,
               S3_SECRET_KEY=SK if s.principals else s.rgw.secret_key)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    s.procs.append(p)
    lines = []

    def until(pred, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip())
            if pred(line):
                return line
        raise AssertionError("\n".join(lines))

    until(lambda x: x.startswith("wrote"))
    os.kill(p.pid, signal.SIGSTOP)
    time.sleep(LEASE_MS / 1000 + 0.5)
    os.kill(p.pid, signal.SIGCONT)
    until(lambda x: "lease lost: expired" in x)
    until(lambda x: x.startswith("wrote"))           # a new lease, writing again
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == 0, lines
    out = "\n".join(lines + [p.stdout.read()])
    assert "stopped" in out
    tokens = [int(x.split("token ")[1].split()[0]) for x in out.splitlines()
              if x.startswith("wrote")]
    assert len(set(tokens)) >= 2 and tokens == sorted(tokens), out
