#!/usr/bin/python3
"""Fault-injection test of fencegate, in the spirit of Jepsen: contending
workers, a nemesis, and a checker that reads the real store.

    /usr/bin/python3 tests/fault/jepsen.py [--gateways 2] [--workers 4] [--duration 60]
        [--seed N] [--mode normal|bypass|cond|cond-off] [--out DIR] [--rgw-env FILE]

What runs (everything on 127.0.0.1, every process stopped by PID at the end):

  * a Ceph RGW (tests/rgw/rgw.sh), or the one FILE (rgw.sh's env file) names;
    a versioned data bucket (unversioned in the cond modes) and a locks
    bucket made directly at RGW;
  * N gateways (build/fencegate, or $FENCEGATE_BIN) sharing one `s3`
    election (each its own gateway_id, data_dir and port), each talking to
    RGW through its own fault relay (fault_relay.py) that delays requests and
    holds their last bytes, well inside fencing.commit_margin_ms (the cond
    modes, below, also hold some writes far beyond it);
  * workers (worker.py), separate processes, --locks locks with a few keys
    each, two or more workers per lock: acquire, renew at a third of the
    lease, write through a random gateway, log every attempt;
  * the nemesis: SIGSTOP of workers for longer than their lease (then
    SIGCONT: zombies), kill -9 and restart of gateways (same data_dir, same
    port), SIGSTOP/SIGCONT of gateways; never all gateways at once;
  * a poller of every gateway's GET /_fencegate/v1/fences;

then everything is resumed, workers stop, in-flight requests drain, gateways
stop, their audit logs are read (`fencegate audit --json`), every version of
every key is listed and read from RGW directly, and check.py decides.  The
last line is "N passed, N failed"; the exit status is 1 on any violation, 2
when the harness itself could not run.

--mode bypass runs the same workload with the writes going straight to RGW,
around the fence: the checker must find ordering violations there (it proves
the checker can fail).

--mode cond breaks the one timing assumption on purpose: the relays hold a
share (--p-long-hold) of the workers' writes' last bytes for up to
--long-hold-ms (5 s against a 1 s margin), so a write admitted in time reaches
RGW after its lease has ended and a newer epoch has written.  Only the
store's own check can stop it: the gateways run with
fencing.conditional_writes "on", on an unversioned data bucket (RGW 16
honours conditions only there).  With no versions to list, a watcher HEADs
every key at RGW throughout the run, and the relays log when each write's
last byte went on; check.py orders by those (see its docstring).
--mode cond-off is the same with conditional_writes "off": the control, in
which the checker must find stale versions.

Write windows: the config keys fencing.commit_margin_ms / election.shared /
election.shared_window_ms are put in the gateways' config when the binary
accepts them (probed with `fencegate check-config`); FAULT_WINDOW_KEYS=1
forces them in, FAULT_WINDOW_KEYS=0 leaves them out.  Without them the
relay still keeps to the same margin (1000 ms, the documented default).
"""

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

import requests  # noqa: E402

import conftest  # noqa: E402  (helpers: Rgw, Gateway, free_port, cleanup by PID)
from conftest import Gateway, Rgw, free_port, read_env_file  # noqa: E402

sys.path.insert(0, str(HERE))
import check  # noqa: E402

PY = "/usr/bin/python3"


class HarnessError(Exception):
    pass


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def window_keys_supported(binary, workdir):
    """True when `fencegate check-config` accepts the write-window keys."""
    cfg = {
        "listen": ["127.0.0.1:1"], "data_dir": str(workdir / "probe-data"),
        "upstream": {"endpoint": "http://127.0.0.1:1", "access_key": "a", "secret_key": "b"},
        "election": {"backend": "s3", "bucket": "locks", "shared": True,
                     "shared_window_ms": 4000, "default_lease_ms": 5000, "min_lease_ms": 4500},
        "fencing": {"commit_margin_ms": 1000},
    }
    path = workdir / "probe-config.json"
    path.write_text(json.dumps(cfg))
    p = subprocess.run([binary, "check-config", "-c", str(path)], capture_output=True, text=True,
                       timeout=30)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


class Proc:
    """A child process we started, stopped by its PID."""

    def __init__(self, argv, log_path, **kw):
        self.log_f = open(log_path, "ab")
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log_f,
                                  stderr=self.log_f, start_new_session=True, **kw)
        self.pid = self.p.pid
        self.key = conftest._register_cleanup(self.kill)

    def alive(self):
        return self.p.poll() is None

    def signal(self, sig):
        if self.p.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self):
        if self.p.poll() is None:
            self.signal(signal.SIGCONT)
            self.p.kill()
            self.p.wait(10)
        conftest._unregister_cleanup(self.key)
        self.log_f.close()

    def terminate(self, timeout=10):
        if self.p.poll() is None:
            self.signal(signal.SIGCONT)
            self.p.terminate()
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


def stop_in_sleep(proc, within=1.0):
    """SIGSTOP proc as soon as the kernel shows it sleeping in nanosleep (the
    worker's think time); False (and nothing sent) if that did not happen
    within `within` seconds."""
    path = f"/proc/{proc.pid}/wchan"
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                if "nanosleep" in f.read():
                    proc.signal(signal.SIGSTOP)
                    return True
        except OSError:
            return False
        time.sleep(0.002)
    return False


class Gw:
    """A gateway under the nemesis: state is up, paused, down or restarting."""

    def __init__(self, idx, gw):
        self.idx = idx
        self.gw = gw
        self.state = "down"
        self.life = 0


class Run:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out)
        self.rng = random.Random(args.seed)
        self.rgw = None
        self.rgw_dir = None
        self.cond = args.mode in ("cond", "cond-off")
        self.relays = []
        self.gws = []
        self.workers = []  # [Proc, wid, paused]
        self.stop_nemesis = threading.Event()
        self.stop_poller = threading.Event()
        self.stop_watch = threading.Event()
        self.nem_log = open(self.out / "nemesis.jsonl", "a", buffering=1)
        self.fence_log = open(self.out / "fences.jsonl", "a", buffering=1)
        self.log_lock = threading.Lock()
        self.threads = []
        self.errors = []
        self.holder_pauses = collections.Counter()

    def nem(self, ev, **kw):
        rec = dict(ev=ev, t=time.time(), **kw)
        with self.log_lock:
            self.nem_log.write(json.dumps(rec) + "\n")

    # ------------------------------------------------------------ setup --

    def boot_rgw(self):
        a = self.args
        if a.rgw_env:
            self.rgw = Rgw(read_env_file(a.rgw_env), a.rgw_env)
            return
        self.rgw_dir = tempfile.mkdtemp(prefix="fg-fault-rgw-")
        d = self.rgw_dir
        self.rgw_key = conftest._register_cleanup(
            lambda: subprocess.run(["bash", str(conftest.RGW_SH), "stop", d], timeout=60,
                                   check=False))
        t0 = time.monotonic()
        p = subprocess.run(["bash", str(conftest.RGW_SH), "start", d], capture_output=True,
                           text=True, timeout=conftest.RGW_BOOT_TIMEOUT)
        if p.returncode != 0:
            raise HarnessError(f"RGW did not boot: {p.stderr[-2000:]}")
        self.rgw = Rgw(read_env_file(Path(d) / "env"), Path(d) / "env", d, owned=True)
        log(f"RGW up at {self.rgw.endpoint} in {time.monotonic() - t0:.1f}s")

    def setup(self):
        a = self.args
        binary = conftest.gateway_bin()
        if not os.access(binary, os.X_OK):
            raise HarnessError(f"no gateway binary at {binary} (make, or FENCEGATE_BIN)")
        supported, msg = window_keys_supported(binary, self.out)
        forced = os.environ.get("FAULT_WINDOW_KEYS")
        self.window_keys = supported if forced is None else forced == "1"
        log(f"window keys: {'in config' if self.window_keys else 'left out'} "
            f"(binary {'accepts' if supported else 'refuses'} them"
            f"{'' if supported else ': ' + msg}; FAULT_WINDOW_KEYS={forced})")
        self.boot_rgw()
        c = self.rgw.client()
        tag = f"{os.getpid()}-{self.rng.getrandbits(24):06x}"
        self.bucket = f"fault-data-{tag}"
        self.locks_bucket = f"fault-locks-{tag}"
        c.create_bucket(Bucket=self.bucket)
        if not self.cond:
            c.put_bucket_versioning(Bucket=self.bucket,
                                    VersioningConfiguration={"Status": "Enabled"})
        c.create_bucket(Bucket=self.locks_bucket)
        self.locks = [f"L{i}" for i in range(a.locks)]
        self.lock_of = {f"w{i}": self.locks[i % a.locks] for i in range(a.workers)}
        margin = a.commit_margin_ms
        # The relay's whole delay of a completely sent request stays inside the
        # margin, with room left for RGW's own commit time.
        self.max_delay = self.max_hold = margin * 0.2
        election = {"backend": "s3", "bucket": self.locks_bucket, "prefix": "fencegate/",
                    "default_lease_ms": a.lease_ms, "min_lease_ms": min(a.lease_ms, 1000)}
        fencing = {}
        if self.cond:
            fencing["conditional_writes"] = "on" if a.mode == "cond" else "off"
        if self.window_keys:
            election.update({"shared": True, "shared_window_ms": a.shared_window_ms,
                             "min_lease_ms": a.lease_ms})
            fencing["commit_margin_ms"] = margin
        up_port = self.rgw.port
        for i in range(a.gateways):
            rport = free_port()
            ready = self.out / f"relay-{i}.port"
            rp = Proc([PY, str(HERE / "fault_relay.py"), "--upstream-port", str(up_port),
                       "--port", str(rport), "--log", str(self.out / f"relay-{i}.jsonl"),
                       "--seed", str(a.seed * 100 + i), "--max-delay-ms", str(self.max_delay),
                       "--max-hold-ms", str(self.max_hold), "--ready-file", str(ready)]
                      + (["--p-long-hold", str(a.p_long_hold), "--long-hold-ms",
                          str(a.long_hold_ms)] if self.cond else []),
                      self.out / f"relay-{i}.log")
            self.relays.append(rp)
            deadline = time.monotonic() + 15
            while not ready.exists():
                if not rp.alive() or time.monotonic() > deadline:
                    raise HarnessError(f"relay {i} did not start")
                time.sleep(0.05)
            overrides = {
                "gateway_id": f"fault-gw{i}",
                "log_level": "info",
                "upstream": {"endpoint": f"http://127.0.0.1:{rport}"},
                "election": election,
                "fences": [{"bucket": self.bucket, "prefix": f"{lock}/", "lock": lock,
                            "require_token": True} for lock in self.locks],
            }
            if fencing:
                overrides["fencing"] = fencing
            g = Gateway(self.rgw, self.out / f"gw{i}", overrides, name=f"gw{i}")
            self.gws.append(Gw(i, g))
        for g in self.gws:
            if not self.start_gw(g):
                raise HarnessError(f"gw{g.idx} did not start:\n{g.gw.log(tail=20)}")
        for g in self.gws:
            self.wait_readyz(g)
        self.write_run_json(started=time.time())

    def write_run_json(self, **extra):
        a = self.args
        run = {
            "mode": a.mode, "gateways": a.gateways, "workers": a.workers, "duration": a.duration,
            "seed": a.seed, "locks": self.locks, "keys_per_lock": a.keys_per_lock,
            "lock_of": self.lock_of, "lease_ms": a.lease_ms,
            "commit_margin_ms": a.commit_margin_ms, "window_keys": self.window_keys,
            "relay_max_delay_ms": self.max_delay, "relay_max_hold_ms": self.max_hold,
            "bucket": self.bucket, "locks_bucket": self.locks_bucket,
            "gateway_urls": [g.gw.url for g in self.gws], "binary": conftest.gateway_bin(),
            "min_acked": a.min_acked, "faults": a.faults, "versioned": not self.cond,
            "conditional_writes": fencing_mode(a.mode),
            "relay_long_hold_ms": a.long_hold_ms if self.cond else None,
            "relay_p_long_hold": a.p_long_hold if self.cond else None,
        }
        run.update(extra)
        old = self.out / "run.json"
        if old.exists():
            prev = json.loads(old.read_text())
            prev.update(run)
            run = prev
        (self.out / "run.json").write_text(json.dumps(run, indent=1) + "\n")

    def start_gw(self, g):
        """Start (or restart) a gateway; Gateway.start fails via pytest.fail,
        which is a BaseException: turn it into a logged error."""
        try:
            g.gw.start(wait=True)
        except BaseException as e:  # noqa: BLE001 - pytest.fail's Failed
            if isinstance(e, KeyboardInterrupt):
                raise
            self.errors.append(f"gw{g.idx} did not start: {str(e)[:500]}")
            self.nem("gw-start-failed", g=g.idx, err=str(e)[:300])
            g.state = "down"
            return False
        g.life += 1
        g.state = "up"
        self.nem("gw-up", g=g.idx, life=g.life, pid=g.gw.pid)
        return True

    def wait_readyz(self, g, timeout=30):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                r = requests.get(f"{g.gw.url}/readyz", timeout=2)
                if r.status_code == 200:
                    return
                last = r.text
            except requests.RequestException as e:
                last = repr(e)
            time.sleep(0.1)
        raise HarnessError(f"gw{g.idx} not ready: {last}\n{g.gw.log(tail=30)}")

    # --------------------------------------------------------- workload --

    def start_workers(self):
        a = self.args
        wdir = self.out / "workers"
        wdir.mkdir(exist_ok=True)
        self.stop_file = self.out / "stop"
        cfg = {
            "mode": a.mode, "seed": a.seed, "bucket": self.bucket,
            "gateways": [g.gw.url for g in self.gws],
            "rgw_endpoint": self.rgw.endpoint, "rgw_access_key": self.rgw.access_key,
            "rgw_secret_key": self.rgw.secret_key,
            "lock_of": self.lock_of, "keys_per_lock": a.keys_per_lock,
            "lease_ms": a.lease_ms, "acquire_wait_ms": 2 * a.lease_ms,
            "write_timeout_s": a.write_timeout, "think_ms": [10, 60], "p_empty": 0.2,
            "stop_file": str(self.stop_file),
            "deadline": time.time() + a.duration + 60,
        }
        (self.out / "worker-config.json").write_text(json.dumps(cfg, indent=1))
        env = conftest._clean_env()
        for wid in sorted(self.lock_of, key=lambda w: int(w[1:])):
            p = Proc([PY, str(HERE / "worker.py"), str(self.out / "worker-config.json"), wid,
                      str(wdir / f"{wid}.jsonl")], wdir / f"{wid}.log", env=env)
            self.workers.append([p, wid, False])
            self.nem("worker-start", w=wid, pid=p.pid)

    def poll_fences(self):
        while not self.stop_poller.is_set():
            self.poll_fences_once()
            self.stop_poller.wait(0.25)

    def poll_fences_once(self):
        for g in self.gws:
            if g.state != "up":
                continue
            life = g.life
            try:
                r = requests.get(f"{g.gw.url}/_fencegate/v1/fences", timeout=1)
            except requests.RequestException:
                continue
            if r.status_code != 200:
                continue
            f = {x["lock"]: x["token"] for x in r.json().get("fences", [])}
            with self.log_lock:
                self.fence_log.write(json.dumps({"g": g.idx, "life": life, "t": time.time(),
                                                 "fences": f}) + "\n")

    def watch_store(self):
        """cond modes: HEAD every key at RGW, round and round, and log what is
        current (an unversioned bucket keeps no history of its own)."""
        c = self.rgw.client(connect_timeout=2, read_timeout=5)
        keys = [f"{lock}/k{i}" for lock in self.locks for i in range(self.args.keys_per_lock)]
        with open(self.out / "store-watch.jsonl", "a", buffering=1) as f:
            while not self.stop_watch.is_set():
                for key in keys:
                    t0 = time.time()
                    try:
                        r = c.head_object(Bucket=self.bucket, Key=key)
                    except Exception:  # noqa: BLE001 - absent yet, or RGW busy: no sample
                        continue
                    m = r.get("Metadata", {})
                    f.write(json.dumps({"t": t0, "key": key, "vid": m.get("fg-vid"),
                                        "epoch": m.get("fencing-epoch"),
                                        "etag": r.get("ETag")}) + "\n")
                self.stop_watch.wait(0.01)

    def progress(self, elapsed):
        writes = collections.Counter()
        for path in (self.out / "workers").glob("*.jsonl"):
            with open(path) as f:
                for line in f:
                    if '"phase":"done"' in line:
                        writes[json.loads(line)["outcome"]] += 1
        nem = collections.Counter()
        with open(self.out / "nemesis.jsonl") as f:
            for line in f:
                ev = json.loads(line)["ev"]
                if ev.startswith("nem-"):
                    nem[ev[4:]] += 1
        log(f"{elapsed:.0f}s: writes {dict(writes)}; faults {dict(nem)}; gateways "
            f"{[g.state for g in self.gws]}")

    # ---------------------------------------------------------- nemesis --

    def nemesis(self):
        a = self.args
        rng = random.Random(a.seed + 1)
        lease = a.lease_ms / 1000.0
        pending = []  # (due, fn, description)
        # Warm-up: let every lock get its first holder before the faults start.
        next_at = time.monotonic() + lease + rng.uniform(0.5, 1.5)
        end = time.monotonic() + a.duration
        while not self.stop_nemesis.is_set() and time.monotonic() < end:
            now = time.monotonic()
            for item in [p for p in pending if p[0] <= now]:
                pending.remove(item)
                item[1]()
            if now >= next_at:
                next_at = now + rng.uniform(*a.nemesis_interval)
                self.nemesis_act(rng, lease, pending, now)
            time.sleep(0.05)
        for item in sorted(pending, key=lambda p: p[0]):
            item[1]()

    def holder_of(self, lock):
        """The live holder of lock as the first healthy gateway to answer sees
        it, or None."""
        up = self.healthy()
        for g in random.sample(up, len(up)):
            try:
                r = requests.get(f"{g.gw.url}/_fencegate/v1/locks/{lock}", timeout=1)
                j = r.json()
            except (requests.RequestException, ValueError):
                continue
            if r.status_code == 200:
                return j.get("holder") if j.get("live") else None
        return None

    def healthy(self):
        return [g for g in self.gws if g.state == "up"]

    def nemesis_act(self, rng, lease, pending, now):
        a = self.args
        gw_weight = 2 if len(self.gws) > 1 else 1
        weights = {"pause-worker": 4, "kill-gw": gw_weight, "pause-gw": gw_weight}
        choices = [f for f in a.faults for _ in range(weights[f])]
        act = rng.choice(choices)
        if act == "pause-worker":
            free = [w for w in self.workers if not w[2] and w[0].alive()]
            if not free or sum(1 for w in self.workers if w[2]) >= max(1, len(self.workers) // 2):
                return
            w = rng.choice(free)
            holder = None
            if rng.random() < 0.85:  # mostly the current holder: a zombie in the making
                by_wid = {cand[1]: cand for cand in free}
                # The locks whose holders were paused least often first, so
                # every lock sees hand-overs even in a short run.
                order = sorted(self.locks, key=lambda lk: (self.holder_pauses[lk], rng.random()))
                for lock in order:
                    holder = self.holder_of(lock)
                    if holder in by_wid:
                        w = by_wid[holder]
                        self.holder_pauses[lock] += 1
                        break
                    holder = None
            dur = lease * 1.5 + rng.uniform(0.5, 2.0)
            w[2] = True
            # Mostly aim at the worker's think time, between its lease
            # bookkeeping and its next write (a GC pause there is the classic
            # zombie); otherwise wherever it is, often inside a request.
            aimed = rng.random() < 0.7 and stop_in_sleep(w[0])
            if not aimed:
                w[0].signal(signal.SIGSTOP)
            now = time.monotonic()  # the pause lasts dur from the SIGSTOP, however long aiming took
            self.nem("nem-pause-worker", w=w[1], secs=round(dur, 2), holder=w[1] == holder,
                     aimed=aimed)

            def resume(w=w):
                w[0].signal(signal.SIGCONT)
                w[2] = False
                self.nem("worker-resume", w=w[1])
            pending.append((now + dur, resume))
            return
        up = self.healthy()
        if len(self.gws) > 1 and len(up) <= 1:
            return  # never all gateways at once
        if not up:
            return
        g = rng.choice(up)
        if act == "kill-gw":
            g.state = "restarting"
            g.gw.kill9()
            dur = rng.uniform(0.1, 1.5)
            self.nem("nem-kill-gw", g=g.idx, down_secs=round(dur, 2))

            def restart(g=g, dur=dur):
                def run():
                    time.sleep(dur)
                    for _ in range(3):
                        if self.start_gw(g):
                            return
                        time.sleep(0.5)
                t = threading.Thread(target=run, daemon=True)
                t.start()
                self.threads.append(t)
            restart()
        else:
            dur = rng.uniform(0.3, lease * 1.5)
            g.state = "paused"
            os.kill(g.gw.pid, signal.SIGSTOP)
            self.nem("nem-pause-gw", g=g.idx, secs=round(dur, 2))

            def resume(g=g):
                if g.gw.pid is not None:
                    os.kill(g.gw.pid, signal.SIGCONT)
                g.state = "up"
                self.nem("gw-resume", g=g.idx)
            pending.append((now + dur, resume))

    # ---------------------------------------------------------- the run --

    def workload(self):
        a = self.args
        self.start_workers()
        poller = threading.Thread(target=self.poll_fences, daemon=True)
        poller.start()
        watcher = None
        if self.cond:
            watcher = threading.Thread(target=self.watch_store, daemon=True)
            watcher.start()
        log(f"workload: {a.workers} workers on {len(self.locks)} locks, {a.gateways} gateway(s), "
            f"{a.duration}s, mode {a.mode}, seed {a.seed}")
        t0 = time.monotonic()
        if a.nemesis:
            nem = threading.Thread(target=self.nemesis, daemon=True)
            nem.start()
        next_report = t0 + a.progress
        while time.monotonic() - t0 < a.duration:
            time.sleep(0.2)
            if time.monotonic() >= next_report:
                next_report += a.progress
                self.progress(time.monotonic() - t0)
        if a.nemesis:
            nem.join(30)
        log("workload over: resuming everything, stopping workers")
        for w in self.workers:
            if w[2]:
                w[0].signal(signal.SIGCONT)
                w[2] = False
        for t in self.threads:
            t.join(60)
        for g in self.gws:
            if g.state == "paused" and g.gw.pid is not None:
                os.kill(g.gw.pid, signal.SIGCONT)
                g.state = "up"
            if g.state == "down" or not g.gw.alive():
                if g.gw.proc is not None:
                    g.gw.kill9()
                self.start_gw(g)
        self.stop_file.touch()
        deadline = time.monotonic() + 30 + 2 * a.lease_ms / 1000
        for w in self.workers:
            try:
                w[0].p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.errors.append(f"worker {w[1]} did not stop by itself; killed")
                w[0].kill()
        # Anything a relay still holds reaches RGW within the margin (in the
        # cond modes, within the long hold).
        held = max(a.commit_margin_ms, a.long_hold_ms if self.cond else 0)
        time.sleep(held / 1000 + 1.0)
        self.stop_poller.set()
        self.stop_watch.set()
        poller.join(10)
        if watcher is not None:
            watcher.join(10)
        self.poll_fences_once()
        self.write_run_json(ended=time.time(), errors=self.errors)

    def collect(self):
        adir = self.out / "audit"
        adir.mkdir(exist_ok=True)
        for g in self.gws:
            g.gw.stop()
            g.state = "down"
            records, after = [], None
            for _ in range(1000):
                cmd = [conftest.gateway_bin(), "audit", "--data-dir", str(g.gw.data_dir),
                       "--json", "--limit", "10000"]
                if after:
                    cmd += ["--after", after]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                if p.returncode != 0:
                    raise HarnessError(f"fencegate audit gw{g.idx}: {p.stderr}")
                j = json.loads(p.stdout)
                records.extend(j["records"])
                after = j.get("next")
                if not after:
                    break
            (adir / f"gw{g.idx}.json").write_text(json.dumps({"records": records}))
        self.dump_versions()

    def dump_versions(self):
        import concurrent.futures
        c = self.rgw.client(max_pool_connections=16)
        raw = []
        for page in c.get_paginator("list_object_versions").paginate(Bucket=self.bucket):
            for v in page.get("Versions", []):
                raw.append(dict(key=v["Key"], version_id=v["VersionId"], size=v["Size"],
                                last_modified_ms=int(v["LastModified"].timestamp() * 1000 + 0.5),
                                is_latest=v["IsLatest"]))
            for d in page.get("DeleteMarkers", []):
                raw.append(dict(key=d["Key"], version_id=d["VersionId"], size=0,
                                last_modified_ms=int(d["LastModified"].timestamp() * 1000 + 0.5),
                                is_latest=d["IsLatest"], delete_marker=True))
        # The listing gives each key's versions newest first: that is the
        # store's commit order; number them oldest = 0.
        per_key = {}
        for v in raw:
            per_key.setdefault(v["key"], []).append(v)
        for vs in per_key.values():
            vs = [v for v in vs if not v.get("delete_marker")]
            for i, v in enumerate(reversed(vs)):
                v["order"] = i

        def fetch(v):
            if v.get("delete_marker"):
                return v
            kw = {"Range": "bytes=0-127"} if v["size"] else {}
            if not self.cond:
                kw["VersionId"] = v["version_id"]
            r = c.get_object(Bucket=self.bucket, Key=v["key"], **kw)
            head = r["Body"].read()
            v["meta"] = r.get("Metadata", {})
            vid = v["meta"].get("fg-vid", "")
            v["body_ok"] = bool(vid) and head.startswith((vid + "\n").encode()[:len(head)])
            return v

        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            versions = list(ex.map(fetch, raw))
        (self.out / "versions.json").write_text(json.dumps(versions))
        log(f"store: {len(versions)} versions of {len(per_key)} keys read from RGW")

    def teardown(self):
        self.stop_nemesis.set()
        self.stop_poller.set()
        self.stop_watch.set()
        for w in self.workers:
            w[0].kill()
        for g in self.gws:
            if g.gw.proc is not None:
                if g.gw.pid:
                    try:
                        os.kill(g.gw.pid, signal.SIGCONT)
                    except ProcessLookupError:
                        pass
                g.gw.stop()
        for r in self.relays:
            r.terminate()
        if self.rgw_dir:
            subprocess.run(["bash", str(conftest.RGW_SH), "stop", self.rgw_dir], timeout=60,
                           check=False)
            conftest._unregister_cleanup(self.rgw_key)
            if not self.args.keep_rgw:
                import shutil
                shutil.rmtree(self.rgw_dir, ignore_errors=True)
        elif self.rgw is not None and not self.args.keep_buckets:
            try:
                c = self.rgw.client()
                for b in (self.bucket, self.locks_bucket):
                    delete_bucket_all(c, b)
            except Exception as e:  # noqa: BLE001 - RGW is throw-away anyway
                log(f"bucket cleanup: {e}")


def fencing_mode(mode):
    """fencing.conditional_writes as the mode sets it (None: the default)."""
    return {"cond": "on", "cond-off": "off"}.get(mode)


def delete_bucket_all(c, bucket):
    for page in c.get_paginator("list_object_versions").paginate(Bucket=bucket):
        objs = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        for i in range(0, len(objs), 1000):
            c.delete_objects(Bucket=bucket, Delete={"Objects": objs[i:i + 1000], "Quiet": True})
    c.delete_bucket(Bucket=bucket)


def main():
    ap = argparse.ArgumentParser(
        description="fault-injection test of fencegate (workers, nemesis, checker on RGW)")
    ap.add_argument("--gateways", type=int, default=2)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--locks", type=int, default=2)
    ap.add_argument("--keys-per-lock", type=int, default=3)
    ap.add_argument("--duration", type=float, default=60, help="seconds of workload")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--mode", choices=["normal", "bypass", "cond", "cond-off"], default="normal")
    ap.add_argument("--out", help="output directory (default: a new temp dir)")
    ap.add_argument("--rgw-env", help="use the running RGW this rgw.sh env file describes")
    ap.add_argument("--lease-ms", type=int, default=5000)
    ap.add_argument("--commit-margin-ms", type=int, default=1000)
    ap.add_argument("--shared-window-ms", type=int, default=4000)
    ap.add_argument("--long-hold-ms", type=float, default=5000,
                    help="cond modes: longest hold of a write's last bytes at a relay")
    ap.add_argument("--p-long-hold", type=float, default=0.2,
                    help="cond modes: share of the workers' writes held long")
    ap.add_argument("--write-timeout", type=float, default=20, help="worker's read timeout, s")
    ap.add_argument("--nemesis-interval", type=float, nargs=2, default=[0.7, 2.0],
                    metavar=("MIN", "MAX"))
    ap.add_argument("--faults", default="pause-worker,kill-gw,pause-gw",
                    help="comma-separated nemesis actions: pause-worker, kill-gw, pause-gw")
    ap.add_argument("--no-nemesis", dest="nemesis", action="store_false")
    ap.add_argument("--min-acked", type=int, default=20)
    ap.add_argument("--progress", type=float, default=30, help="seconds between progress lines")
    ap.add_argument("--keep-rgw", action="store_true")
    ap.add_argument("--keep-buckets", action="store_true")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 30)
    args.faults = [f for f in args.faults.split(",") if f]
    if not args.faults or set(args.faults) - {"pause-worker", "kill-gw", "pause-gw"}:
        ap.error("--faults: a comma-separated subset of pause-worker,kill-gw,pause-gw")
    if args.workers < 2 * args.locks:
        ap.error("need at least two workers per lock (--workers >= 2 * --locks)")
    out = Path(args.out or tempfile.mkdtemp(prefix="fg-fault-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if (out / "run.json").exists():
        ap.error(f"{out} holds an earlier run: give a new or empty --out")
    args.out = str(out)
    log(f"output in {out} (seed {args.seed})")

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    # A watchdog: whatever hangs, the run ends (and stops what it started).
    signal.signal(signal.SIGALRM, on_term)
    signal.alarm(int(args.duration) + 300)

    run = Run(args)
    t0 = time.monotonic()
    try:
        run.setup()
        run.workload()
        run.collect()
    except (HarnessError, KeyboardInterrupt) as e:
        log(f"harness error: {e!r}")
        run.teardown()
        run = None
        print("0 passed, 1 failed (harness)")
        return 2
    finally:
        if run is not None:
            run.teardown()
    signal.alarm(0)
    log(f"run took {time.monotonic() - t0:.1f}s; checking")
    for e in run.errors:
        print(f"harness note: {e}")
    props, fig = check.check(str(out))
    with open(out / "result.json", "w") as f:
        json.dump({"figures": fig, "properties": [p.as_dict() for p in props.values()],
                   "errors": run.errors, "seed": args.seed}, f, indent=1)
    failed = check.report(props, fig)  # ends with the line "N passed, N failed"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
