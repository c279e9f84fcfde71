"""The JavaScript worker library (clients/js), installed as users get it: from
`npm pack` into a scratch project (`make js-client`, build/jsclient), driven
by the node scripts in tests/js/worker/ against the real gateway and RGW,
with principals (the JSON API signed with SigV4) and without (the steady
writing test, the longest, with principals only).  Each script
prints JSON lines {ev, t, ...}, t on CLOCK_MONOTONIC like time.monotonic()."""
import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests
from botocore.exceptions import ClientError

from relay import BlackholeRelay
from test_auth import AK, SK
from test_fail_closed import signed_get
from test_sigv2 import signed
from test_windows import LOCK, fence_rule, wait_ready

REPO = Path(__file__).resolve().parents[2]
WORKER_SRC = REPO / "tests" / "js" / "worker"
EXAMPLE = REPO / "clients" / "js" / "examples" / "worker.mjs"
README = REPO / "README.md"
LEASE = 2000  # ms, the workers' lease


def jsclient_dir():
    d = os.environ.get("FENCEGATE_JSCLIENT")
    if not d:
        build = Path(os.environ.get("FENCEGATE_BUILD") or REPO / "build")
        d = build / "jsclient"
    d = Path(d)
    if not (d / "node_modules" / "fencegate" / "package.json").is_file():
        # `make integration` installs it (make js-client); a direct pytest run does it here
        subprocess.run(["make", "-C", str(REPO), f"BUILD={d.parent}", "js-client"], check=True,
                       timeout=600, stdin=subprocess.DEVNULL)
    for f in WORKER_SRC.glob("*.mjs"):
        shutil.copy(f, d / f.name)
    shutil.copy(EXAMPLE, d / "example-worker.mjs")
    return d


@pytest.fixture(scope="module")
def jsdir():
    if shutil.which("node") is None:
        pytest.fail("node is not installed (make deps installs Debian's nodejs)")
    return jsclient_dir()


@pytest.fixture
def relays():
    made = []

    def make(port):
        r = BlackholeRelay(port)
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


class Worker:
    """A node script from jsdir, its stdout read line by line into events."""

    def __init__(self, jsdir, script, env):
        self.events = []
        self.q = queue.Queue()
        self.stderr_path = Path(jsdir) / f"{script}.{uuid.uuid4().hex[:6]}.stderr"
        self.err = open(self.stderr_path, "wb")
        self.p = subprocess.Popen(["node", str(Path(jsdir) / script)], cwd=jsdir, env=env,
                                  stdout=subprocess.PIPE, stderr=self.err,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.p.pid
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            text = line.decode(errors="replace").rstrip("\n")
            try:
                ev = json.loads(text)
            except ValueError:
                ev = {"ev": "line", "text": text, "t": time.monotonic() * 1000}
            self.events.append(ev)
            self.q.put(ev)

    def wait_for(self, pred, timeout=30, what="event"):
        if isinstance(pred, str):
            name = pred
            pred = lambda e: e["ev"] == name  # noqa: E731
        deadline = time.monotonic() + timeout
        for e in list(self.events):
            if pred(e):
                return e
        while time.monotonic() < deadline:
            try:
                e = self.q.get(timeout=0.05)
            except queue.Empty:
                if self.p.poll() is not None and self.q.empty():
                    break
                continue
            if pred(e):
                return e
        raise AssertionError(f"no {what} within {timeout}s; events {self.events[-12:]}; "
                             f"rc {self.p.poll()}; stderr {self.stderr()[-2000:]}")

    def of(self, name):
        return [e for e in self.events if e["ev"] == name]

    def stderr(self):
        self.err.flush()
        return self.stderr_path.read_text(errors="replace")

    def signal(self, sig):
        if self.p.poll() is None:
            os.kill(self.pid, sig)

    def wait(self, timeout=30):
        rc = self.p.wait(timeout)
        time.sleep(0.1)  # the reader thread drains the pipe
        return rc

    def kill(self):
        if self.p.poll() is None:
            os.kill(self.pid, signal.SIGCONT)
            os.kill(self.pid, signal.SIGKILL)
            self.p.wait(10)
        self.err.close()


@pytest.fixture
def workers(jsdir):
    started = []

    def start(script, env):
        w = Worker(jsdir, script, env)
        started.append(w)
        return w
    yield start
    for w in started:
        w.kill()


# ---------------------------------------------------------------- gateway --

@pytest.fixture(params=["sigv4", "anonymous"])
def wgw(request, gateway, tmp_path, bucket):
    """A gateway with a fence rule (orders/ under the lock orders) and the dir
    election; with the principal `worker` (AK/SK) when sigv4."""
    over = {"election": {"backend": "dir", "path": str(tmp_path / "locks"), "min_lease_ms": 200},
            "fences": fence_rule(bucket)}
    if request.param == "sigv4":
        over["principals"] = [{"name": "worker", "access_key": AK, "secret_key": SK}]
    gw = gateway(over)
    wait_ready(gw)
    gw.auth = request.param
    gw.locks_dir = tmp_path / "locks"
    return gw


def creds(gw):
    return (AK, SK) if gw.auth == "sigv4" else None


def api_get(gw, path):
    url = f"{gw.url}{path}"
    return signed_get(url, AK, SK) if creds(gw) else requests.get(url, timeout=10)


def api_post(gw, path, obj):
    url = f"{gw.url}{path}"
    body = json.dumps(obj).encode()
    h = {"Content-Type": "application/json"}
    if creds(gw):
        h = dict(signed("POST", url, body, headers=h).headers)
    return requests.post(url, data=body, headers=h, timeout=30)


def audit(gw):
    r = api_get(gw, "/_fencegate/v1/audit?limit=1000")
    assert r.status_code == 200, r.text
    return r.json()["records"]


def s3c(gw):
    """boto3 through the gateway (the principal's keys, or RGW's without principals)."""
    return gw.client(AK, SK) if creds(gw) else gw.client()


def node_env(gw, bucket, url=None, s3url=None, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(FG_URL=url or gw.url, FG_S3_URL=s3url or url or gw.url, FG_BUCKET=bucket,
               FG_LOCK=LOCK, FG_LEASE_MS=str(LEASE),
               FG_PREFIX=f"orders/js-{uuid.uuid4().hex[:6]}/")
    if creds(gw):
        env.update(FG_AK=AK, FG_SK=SK)
    else:
        env.update(FG_AK="", FG_SK="")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def rgw_get(rgw, bucket, key):
    try:
        return rgw.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as e:
        if e.response["Error"]["Code"] == "NoSuchKey":
            return None
        raise


def grants(gw):
    """The gateway's grants on LOCK, from its log: [(token, holder)] in order."""
    out = []
    for line in gw.log().splitlines():
        if f"lock {LOCK} granted: epoch " in line:
            rest = line.split(f"lock {LOCK} granted: epoch ", 1)[1]
            tok, holder = rest.split(" to ", 1)
            out.append((int(tok), holder.strip()))
    return out


# ------------------------------------------------------------------ tests --

@pytest.mark.slow  # timing-bound (2 s leases): not under sanitizers
def test_zombie_sigstop(jsdir, wgw, rgw, bucket, workers, relays):
    """A worker SIGSTOPped past its lease while B takes over and writes: on
    waking, its next write is refused by the library before anything is sent
    (reason expired), the write it had in flight is refused at the gateway
    and nothing of it lands, and RGW holds B's bytes."""
    relay = relays(wgw.port)  # A's traffic, to see what A sends after waking
    env = node_env(wgw, bucket, url=relay.url, FG_HOLDER="A")
    prefix = env["FG_PREFIX"]
    a = workers("zombie.mjs", env)
    token_a = a.wait_for("leased")["token"]
    a.wait_for("inflight-started")
    a.wait_for(lambda e: e["ev"] == "wrote" and e["key"].endswith("a-2"), what="two writes")
    a.signal(signal.SIGSTOP)
    t_stop = time.monotonic()
    wrote_before = {e["key"] for e in a.of("wrote")}
    # B waits for the lock (A's lease runs out at the gateway), then writes
    r = api_post(wgw, f"/_fencegate/v1/locks/{LOCK}/acquire",
                 {"holder": "B", "lease_ms": 30000, "wait_ms": 15000})
    assert r.status_code == 200, r.text
    token_b = r.json()["token"]
    assert token_b > token_a
    # not before A's lease (renewed at most a third of it before the stop) ran out
    assert time.monotonic() - t_stop >= LEASE / 1000 * 2 / 3 - 0.1
    b_body = os.urandom(4096)
    meta = {"fencing-token": str(token_b), "fencing-lock": LOCK}
    s3c(wgw).put_object(Bucket=bucket, Key=prefix + "inflight", Body=b_body, Metadata=meta)
    s3c(wgw).put_object(Bucket=bucket, Key=prefix + "b", Body=b"B's", Metadata=meta)
    t_cont = time.monotonic()
    a.signal(signal.SIGCONT)
    a.wait_for("release", timeout=20)
    assert a.wait(10) == 0, a.stderr()[-2000:]

    lost = a.of("lost")
    assert len(lost) == 1 and lost[0]["reason"] == "expired", a.events
    refused = [e for e in a.of("refused") if e["t"] / 1000 > t_cont]
    assert refused, a.events
    first = refused[0]
    assert first["local"] and first["error"] == "LeaseLost" and first["reason"] == "expired", first
    assert lost[0]["t"] <= first["t"]
    # nothing of A's reached the gateway after waking: no request line at all
    after = [ln for t, ln in relay.lines if t > t_cont]
    assert after == [], after
    assert rgw_get(rgw, bucket, first["key"]) is None
    # no write of A's landed after the stop but those it had finished before it
    assert not [e for e in a.of("wrote") if e["t"] / 1000 > t_cont], a.events
    for key in wrote_before:
        assert rgw_get(rgw, bucket, key) is not None
    # the in-flight write: refused at the gateway, nothing of it at RGW
    res = a.wait_for("inflight-result")
    assert res["ok"] is False, res
    assert res["error"] in ("StaleFencingToken", "FencingLeaseExpired", "EPIPE", "ECONNRESET",
                            "RequestTimeout"), res
    assert rgw_get(rgw, bucket, prefix + "inflight") == b_body
    assert rgw_get(rgw, bucket, prefix + "b") == b"B's"
    recs = [x for x in audit(wgw) if x.get("key") == prefix + "inflight"]
    assert recs and all(x.get("token") == token_a for x in recs), recs
    print(f"zombie ({wgw.auth}): in-flight write {res['error']} "
          f"(audit {[x['kind'] for x in recs]}), loss noticed "
          f"{lost[0]['t'] / 1000 - t_cont:.3f} s after SIGCONT")


@pytest.mark.slow  # timing-bound (2 s leases): not under sanitizers
# one mode (sigv4): it times renewals over several leases, which the shorter
# tests cover in both modes
@pytest.mark.parametrize("wgw", ["sigv4"], indirect=True)
def test_lease_kept_through_steady_writing(jsdir, wgw, rgw, bucket, workers):
    """One lease through 6 lease durations of a write every 100 ms: never
    lost, renewed about three times a lease, every write accepted."""
    duration = 6 * LEASE
    w = workers("steady.mjs", node_env(wgw, bucket, FG_DURATION_MS=duration))
    done = w.wait_for("done", timeout=duration / 1000 + 20)
    assert w.wait(10) == 0, w.stderr()[-2000:]
    assert done["failed"] is None and not done["lost"], done
    assert done["writes"] >= duration / 1000 * 5, done  # about 10 a second, never held up long
    assert done["renewals"] >= 3 * 6 - 2, done
    assert done["minRemaining"] > LEASE / 3, done  # renewed on time, not at the last moment
    assert [t for t, _ in grants(wgw)] == [done["token"]]
    assert w.of("release")[0]["sent"] is True
    print(f"steady ({wgw.auth}): {done['writes']} writes, {done['renewals']} renewals "
          f"in {duration} ms, min remaining {done['minRemaining']:.0f} ms")


@pytest.mark.slow  # timing-bound (2 s leases): not under sanitizers
def test_elect_three_processes(jsdir, wgw, rgw, bucket, workers):
    """Three electors on one lock: one leader at a time (the gateway's grants
    and the workers' own start/stop times agree); kill -9 of the leader, and
    a new leader within lease + 1 s; SIGTERM stops the rest cleanly."""
    env = node_env(wgw, bucket)
    ws = {}
    for name in ("e1", "e2", "e3"):
        ws[name] = workers("elect.mjs", dict(env, FG_HOLDER=name))
    deadline = time.monotonic() + 20
    while not any(w.of("started") for w in ws.values()):
        assert time.monotonic() < deadline, {n: w.events for n, w in ws.items()}
        time.sleep(0.05)
    time.sleep(LEASE / 1000)  # it writes, renews; the others wait
    leader = [n for n, w in ws.items() if w.of("started")]
    assert len(leader) == 1, leader
    leader = leader[0]
    first_token = ws[leader].of("started")[0]["token"]
    assert ws[leader].of("wrote")
    ws[leader].signal(signal.SIGKILL)
    t_kill = time.monotonic()
    ws[leader].wait(10)
    rest = [n for n in ws if n != leader]
    nxt = None
    deadline = time.monotonic() + LEASE / 1000 + 5
    while nxt is None and time.monotonic() < deadline:
        for n in rest:
            if ws[n].of("started"):
                nxt = n
        time.sleep(0.01)
    assert nxt is not None, {n: ws[n].events for n in rest}
    started = ws[nxt].of("started")[0]
    took = started["t"] / 1000 - t_kill
    assert took <= LEASE / 1000 + 1.0, took
    assert started["token"] == first_token + 1
    ws[nxt].wait_for("wrote")
    time.sleep(0.5)
    for n in rest:
        ws[n].signal(signal.SIGTERM)
    for n in rest:
        assert ws[n].wait(15) == 0, ws[n].stderr()[-2000:]

    # one leader at a time: the grants, in order, one per term
    g = grants(wgw)
    assert [t for t, _ in g] == sorted({t for t, _ in g}), g
    terms = []
    for n, w in ws.items():
        evs = [e for e in w.events if e["ev"] in ("started", "stopped")]
        # onStopped only after onStarted, alternating, each with its token
        for i, e in enumerate(evs):
            assert e["ev"] == ("started" if i % 2 == 0 else "stopped"), (n, evs)
            if e["ev"] == "stopped":
                assert e["token"] == evs[i - 1]["token"]
        for i in range(0, len(evs), 2):
            end = evs[i + 1]["t"] if i + 1 < len(evs) else (t_kill * 1000 if n == leader else 1e18)
            terms.append((evs[i]["t"], end, evs[i]["token"], n))
            assert (evs[i]["token"], n) in g, (evs[i], g)
    terms.sort()
    # every grant is a term some elector started, and the other way round,
    # but for one: an elector stopped while its grant was on the way gives it
    # back at once (the lock's last record: that epoch, released)
    started_tokens = sorted(t for _, _, t, _ in terms)
    granted = [t for t, _ in g]
    assert granted[:len(started_tokens)] == started_tokens, (terms, g)
    extra = granted[len(started_tokens):]
    if extra:
        rec = api_get(wgw, f"/_fencegate/v1/locks/{LOCK}").json()
        assert extra == [rec["token"]] and rec["released"] and not rec["live"], (extra, rec)
    for (s1, e1, t1, n1), (s2, e2, t2, n2) in zip(terms, terms[1:]):
        assert e1 <= s2, f"{n1} (token {t1}) still leading when {n2} (token {t2}) started"
        assert t2 > t1
    # the survivors' writes carried their own token; the last write at RGW is the last leader's
    body = rgw_get(rgw, bucket, env["FG_PREFIX"] + "leader").decode()
    assert body.split()[1] == str(terms[-1][2]), (body, terms)
    # each saw the leaders come and go
    for n in rest:
        assert any(e["holder"] == leader for e in ws[n].of("leader")), ws[n].events
    print(f"elect ({wgw.auth}): new leader {took:.2f} s after kill -9 (lease {LEASE} ms); "
          f"grants {g}")


@pytest.mark.slow  # timing-bound (2 s leases): not under sanitizers
def test_gateway_unreachable(jsdir, wgw, bucket, workers, relays):
    """The JSON API blackholed by a relay: the lease is lost at its local
    deadline (a lease after the last confirmed renewal), reason unreachable,
    not after a socket timeout; the next write is refused locally."""
    relay = relays(wgw.port)
    w = workers("unreachable.mjs", node_env(wgw, bucket, url=relay.url, s3url=wgw.url))
    w.wait_for("leased")
    time.sleep(LEASE / 1000)  # a few renewals through the relay
    renews = [t for t, ln in relay.lines if "/renew" in ln]
    assert len(renews) >= 2, relay.lines
    relay.blackhole()
    t_black = time.monotonic()
    last_ok = max(t for t, ln in relay.lines if "/renew" in ln)
    lost = w.wait_for("lost", timeout=LEASE / 1000 + 5)
    t_lost = lost["t"] / 1000
    assert lost["reason"] == "unreachable", lost
    # the deadline is a lease after the last renewal sent that was answered
    assert t_lost - t_black <= LEASE / 1000 + 0.3, (t_lost - t_black, lost)
    assert t_lost - last_ok <= LEASE / 1000 + 0.3, (t_lost - last_ok, lost)
    assert t_lost - last_ok >= LEASE / 1000 * 2 / 3 - 0.05, (t_lost - last_ok, lost)
    wr = w.wait_for("write")
    assert wr["ok"] is False and wr["local"] is True, wr
    rel = w.wait_for("released")
    assert rel["sent"] is False and rel["ms"] < 50, rel  # never blocks after a loss
    assert w.wait(10) == 0
    print(f"unreachable ({wgw.auth}): lost {t_lost - t_black:.2f} s after the blackhole, "
          f"{t_lost - last_ok:.2f} s after the last renewal sent")


@pytest.mark.slow  # timing-bound (2 s leases): not under sanitizers
@pytest.mark.parametrize("wgw", ["anonymous"], indirect=True)  # every caller may revoke
def test_revoked_lease_lost_at_the_next_renewal(jsdir, wgw, bucket, workers):
    """An operator revokes the lease: the worker's next renewal is answered
    409 superseded with its own token, so the lease is lost then (reason
    expired), not at its deadline a lease after the last renewal; the next
    write is refused locally."""
    w = workers("unreachable.mjs", node_env(wgw, bucket, url=wgw.url, s3url=wgw.url))
    w.wait_for("leased")
    time.sleep(LEASE / 1000 / 2)
    t_rev = time.monotonic()
    r = requests.post(f"{wgw.url}/_fencegate/v1/locks/{LOCK}/revoke", json={}, timeout=10)
    assert r.status_code == 200 and r.json()["released"] is True, r.text
    lost = w.wait_for("lost", timeout=LEASE / 1000 + 5)
    assert lost["reason"] == "expired", lost
    # renewals go every third of a lease; the deadline is at least two thirds away
    assert lost["t"] / 1000 - t_rev < LEASE / 1000 * 0.6, (lost["t"] / 1000 - t_rev, lost)
    wr = w.wait_for("write")
    assert wr["ok"] is False and wr["local"] is True, wr
    assert w.wait(10) == 0


@pytest.mark.slow  # timing-bound (2 s leases): not under sanitizers
def test_tokens_on_writes_and_typed_refusals(jsdir, wgw, rgw, bucket, workers):
    """PutObject, CopyObject, DeleteObject, DeleteObjects and a 64 MiB
    multipart upload through an attached client, under a fence rule that
    requires a token; then each refusal code, raised once as its typed error
    (with the SDK's default retries on), audited once at the gateway."""
    env = node_env(wgw, bucket)
    prefix = env["FG_PREFIX"]
    foreign = prefix + "foreign"  # an upload the gateway never saw created
    up = rgw.client().create_multipart_upload(Bucket=bucket, Key=foreign)["UploadId"]
    w = workers("writes.mjs", dict(env, FG_FOREIGN_KEY=foreign, FG_FOREIGN_UPLOAD=up,
                                   FG_HOLDER="writer"))
    out = w.wait_for("done", timeout=180)
    assert w.wait(10) == 0, w.stderr()[-2000:]
    c = rgw.client()
    assert hashlib.sha256(rgw_get(rgw, bucket, prefix + "put")).hexdigest() == out["put"]
    assert hashlib.sha256(rgw_get(rgw, bucket, prefix + "copy")).hexdigest() == out["put"]
    assert rgw_get(rgw, bucket, prefix + "del") is None
    assert out["deleted"] == 2
    assert rgw_get(rgw, bucket, prefix + "multi/1") is None
    assert hashlib.sha256(rgw_get(rgw, bucket, prefix + "big")).hexdigest() == out["big"]
    head = c.head_object(Bucket=bucket, Key=prefix + "big")
    assert "-" in head["ETag"], head  # really multipart
    assert head["Metadata"].get("fencing-epoch") == str(out["token"]), head["Metadata"]
    expect = {"stale": ("StaleFencingToken", 409, "stale"),
              "not_granted": ("FencingTokenNotGranted", 409, "not_granted"),
              "missing": ("MissingFencingToken", 428, "missing_token"),
              "lease_expired": ("FencingLeaseExpired", 409, "lease_expired"),
              "own_expired": ("FencingLeaseExpired", 409, "lease_expired"),
              "own_stale": ("StaleFencingToken", 409, "stale")}
    keys = {"stale": prefix + "r-stale", "not_granted": prefix + "r-not-granted",
            "missing": foreign, "lease_expired": prefix + "r-expired",
            "own_expired": prefix + "r-own-expired", "own_stale": prefix + "r-own-stale"}
    # the lease's own token refused: lost before the throw, the next write
    # (to the same key: one audit record) refused by the library, unsent
    assert out["own_expired"]["lease"] == [True, "expired", "LeaseLost"], out["own_expired"]
    assert out["own_stale"]["lease"] == [True, "superseded", "LeaseLost"], out["own_stale"]
    recs = audit(wgw)
    for k, (name, status, kind) in expect.items():
        r = out[k]
        assert r["ok"] is False and r["error"] == name, (k, r)
        assert r["typed"] and r["fencing"] and r["s3"], (k, r)
        assert r["status"] == status and r["attempts"] == 1, (k, r)
        mine = [x for x in recs if x.get("key") == keys[k]]
        assert len(mine) == 1 and mine[0]["kind"] == kind, (k, mine)  # one request, no retry
    for k in ("r-stale", "r-not-granted", "r-expired", "r-own-expired", "r-own-stale"):
        assert rgw_get(rgw, bucket, prefix + k) is None
    c.abort_multipart_upload(Bucket=bucket, Key=foreign, UploadId=up)
    print(f"writes ({wgw.auth}): 64 MiB multipart in {out['bigMs']} ms; refusals "
          f"{ {k: out[k]['error'] for k in expect} }")


# ---------------------------------------------------------------- example --

def readme_example():
    text = README.read_text()
    start = text.index("### JavaScript")
    block = text[start:].split("```js\n", 1)[1].split("```", 1)[0]
    return block


def test_readme_example_is_the_file():
    assert readme_example() == EXAMPLE.read_text()


@pytest.mark.slow  # timing-bound (2 s leases): not under sanitizers
def test_example_worker(jsdir, wgw, rgw, bucket, workers):
    """clients/js/examples/worker.mjs as users run it: leads and writes,
    survives a SIGSTOP past its lease (the loss reported before any write of
    the old token), leads again later, and stops on SIGTERM."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(FENCEGATE_URL=wgw.url, BUCKET=bucket, LEASE_MS=str(LEASE), HOLDER="example",
               AWS_ACCESS_KEY_ID=AK if creds(wgw) else wgw.rgw.access_key,
               AWS_SECRET_ACCESS_KEY=SK if creds(wgw) else wgw.rgw.secret_key,
               AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=os.devnull,
               AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    w = workers("example-worker.mjs", env)
    lead = w.wait_for(lambda e: e.get("text", "").startswith("leading with token"), what="leading")
    tok = int(lead["text"].split()[-1])
    w.wait_for(lambda e: e.get("text", "").startswith("wrote orders/report"), what="a write")
    w.signal(signal.SIGSTOP)
    r = api_post(wgw, f"/_fencegate/v1/locks/{LOCK}/acquire",
                 {"holder": "B", "lease_ms": LEASE, "wait_ms": 15000})
    assert r.status_code == 200, r.text
    tok_b = r.json()["token"]
    s3c(wgw).put_object(Bucket=bucket, Key="orders/report", Body=b"B\n",
                        Metadata={"fencing-token": str(tok_b), "fencing-lock": LOCK})
    n_before = len(w.events)
    w.signal(signal.SIGCONT)
    w.wait_for(lambda e: e.get("text", "") == "stopped leading: expired", what="the loss")
    # leads again once B's unrenewed lease has run out, then stops on SIGTERM
    again = w.wait_for(lambda e: e.get("text", "").startswith("leading with token")
                       and int(e["text"].split()[-1]) > tok_b, timeout=LEASE / 1000 + 10,
                       what="leading again")
    tok2 = int(again["text"].split()[-1])
    after = [e["text"] for e in w.events[n_before:] if "text" in e]
    loss = after.index("stopped leading: expired")
    assert not [t for t in after[:loss] if t.startswith("wrote")], after
    assert not [t for t in after if t.startswith("wrote") and f"token {tok}," in t], after
    w.wait_for(lambda e: e.get("text", "").startswith(f"wrote orders/report: token {tok2}"),
               what="a write with the new token")
    w.signal(signal.SIGTERM)
    assert w.wait(10) == 0, w.stderr()[-2000:]
    texts = [e.get("text") for e in w.events]
    assert texts[-2:] == ["stopped leading: released", "stopped"], texts
    assert rgw_get(rgw, bucket, "orders/report").startswith(f"example token {tok2} ".encode())
