"""make bench-scale: the gateway at fleet sizes (issue 28).  Loopback only,
bounded (about 9 minutes, 5 of them the flood), no RGW: the upstream is a closed port, which
nothing here reaches (listings, acquires and refused stale writes never
forward).

Per size (1k, 10k, 100k locks: the election cache and fence table seeded by
tests/helpers/store_seed; with BENCH_MKDIRS=1 also as many empty lock
directories in the `dir` election's parent, as large as a real fleet's; off
by default: 100,000 mkdirs took longer than the whole bench on the shared
dev VM's disk.  Seeded locks have no lock files, so every page of /locks
reads each of its locks as GET would (the worst case, "cold" every time):
  - restart-to-ready (process start to /readyz 200);
  - a /locks page (1000) cold after the restart (its locks read like GET),
    warm, and one from the middle of the list; a /fences page first and middle;
  - RSS per lock once every lock was listed (all loaded), store disk per lock;
  - acquire rate of new locks beside the fleet (sequential, 1 connection);
  - refusal throughput and p50/p99 at 1, 8 and 64 connections: stale writes
    on one of the fleet's locks (the middle one), every lock loaded in the
    gateway and in the store, each 409 after its audit record's commit.
With BENCH_MKDIRS=1 and two sizes or more, the `dir` election's acquire rate
beside the smallest and the largest parent directory, measured in rounds
that alternate between the two (BENCH_ROUNDS rounds of BENCH_ROUND_ACQUIRES
new locks each, default 5 x 200), both gateways running: the per-round rates,
the median of each and their ratio (large / small), and each round's own
ratio (its two halves ran back to back) with their median, the median
acquire's time on each side, and the mean acquire split into the dir
backend's own time (fencegate_election_backend_seconds) and the rest, so
that a trend with the directory's size shows through the VM's run-to-run
spread, and where it is.
Then, on a fresh gateway (2 locks): the same refusal rows, and the audit under
a flood (BENCH_FLOOD_S seconds, default 300:
the issue's 5 minutes) from one client address (127.0.0.2, 8 connections:
4 repeating one stale write on one lock, 4 spread over 10,000 locks) beside
a quiet client (127.0.0.1) refused once before and once during the flood:
records kept and dropped per lock and for the flooding client, and whether
the quiet client's oldest record survived.

BENCH_SMOKE=1: a smoke run (1k and 10k locks, 10 s flood, 2 s per refusal
row, 3 acquire rounds of 50) unless BENCH_SIZES / BENCH_FLOOD_S /
BENCH_ROUNDS / BENCH_ROUND_ACQUIRES say otherwise.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ.get("FENCEGATE_BIN", "build/fencegate")
SEED = os.environ.get("FENCEGATE_SEED", "build/tests/helpers/store_seed")
SMOKE = os.environ.get("BENCH_SMOKE", "0") == "1"
SIZES = [int(x) for x in
         os.environ.get("BENCH_SIZES", "1000,10000" if SMOKE else "1000,10000,100000").split(",")]
FLOOD_S = float(os.environ.get("BENCH_FLOOD_S", "10" if SMOKE else "300"))
REFUSE_S = 2 if SMOKE else 5
SPREAD_LOCKS = 10000
AUDIT = {"max_records": 20000, "max_records_per_lock": 1000, "max_records_per_principal": 5000}
MKDIRS = os.environ.get("BENCH_MKDIRS", "0") == "1"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3" if SMOKE else "5"))
ROUND_ACQUIRES = int(os.environ.get("BENCH_ROUND_ACQUIRES", "50" if SMOKE else "200"))
CONNS = (1, 8, 64)
API = "/_fencegate/v1"
GATEWAYS = []  # every Gw made: main() stops them all, however it ends


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gw:
    def __init__(self, work, extra=None):
        self.work = work
        self.port = free_port()
        cfg = {"listen": [f"127.0.0.1:{self.port}"], "data_dir": f"{work}/data",
               "gateway_id": "bench", "workers": 1,
               "fencing": {"commit_margin_ms": 100, "complete_margin_ms": 200},
               "upstream": {"endpoint": f"http://127.0.0.1:{free_port()}", "region": "us-east-1",
                            "addressing": "path", "access_key_env": "FG_UP_AK",
                            "secret_key_env": "FG_UP_SK"},
               "election": {"backend": "dir", "path": f"{work}/locks", "min_lease_ms": 200},
               "fences": [{"bucket": "b", "prefix": "orders/", "lock": "orders",
                           "require_token": True},
                          {"bucket": "b", "prefix": "quiet/", "lock": "quiet",
                           "require_token": True}]}
        cfg.update(extra or {})
        os.makedirs(f"{work}/data", exist_ok=True)
        os.makedirs(f"{work}/locks", exist_ok=True)
        with open(f"{work}/config.json", "w") as f:
            json.dump(cfg, f)
        self.proc = None
        GATEWAYS.append(self)  # a failed check anywhere must not leave one running

    def start(self):
        env = dict(os.environ, FG_UP_AK="bench", FG_UP_SK="benchbenchbench")
        t0 = time.monotonic()
        self.log = open(f"{self.work}/gateway.log", "ab")
        self.proc = subprocess.Popen([BIN, "serve", "-c", f"{self.work}/config.json"], env=env,
                                     stdout=self.log, stderr=self.log)
        while True:
            try:
                st, _ = self.req("GET", "/readyz")
                if st == 200:
                    return time.monotonic() - t0
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() - t0 > 60:
                raise SystemExit(f"gateway did not get ready: see {self.work}/gateway.log")
            time.sleep(0.005)

    def stop(self):
        """Stop this gateway (by its PID) if it runs; main() calls it on every Gw at the end."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
            self.log.close()

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def conn(self, source="127.0.0.1"):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60,
                                          source_address=(source, 0))

    def req(self, method, path, body=None, headers=None, conn=None):
        c = conn or self.conn()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        if conn is None:
            c.close()
        return r.status, data


def timed(fn, n=1):
    t0 = time.perf_counter()
    for _ in range(n):
        out = fn()
    return (time.perf_counter() - t0) / n * 1000, out


def fnv_cursor(kind, name):
    h = 2166136261
    for b in (kind + "1" + name).encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return f"{kind}1{name.encode().hex()}.{h:08x}"


def acquire(gw, conn, lock, holder="bench", lease_ms=60000):
    st, data = gw.req("POST", f"{API}/locks/{lock}/acquire",
                      json.dumps({"holder": holder, "lease_ms": lease_ms}),
                      {"Content-Type": "application/json"}, conn)
    assert st == 200, data
    return json.loads(data)


def release(gw, conn, g):
    st, data = gw.req("POST", f"{API}/locks/{g['lock']}/release",
                      json.dumps({"token": g["token"], "lease_id": g["lease_id"]}),
                      {"Content-Type": "application/json"}, conn)
    assert st == 200, data


def du_bytes(path):
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True)
    return int(out.stdout.split()[0])


def du_disk(path):
    out = subprocess.run(["du", "-sk", path], capture_output=True, text=True)
    return int(out.stdout.split()[0]) * 1024


def fleet(n, root, keep=False):
    """One size's row; keep: leave its directory for acquire_ratio (returned as row["work"])."""
    work = tempfile.mkdtemp(prefix=f"fg-scale-{n}-", dir=root)
    gw = Gw(work, {"audit": AUDIT})
    out = subprocess.run([SEED, f"{work}/data", "L", "1", str(n)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    os.makedirs(f"{work}/locks/fencegate", exist_ok=True)  # the dir backend's prefix
    if MKDIRS:  # as many lock directories in the dir election's parent (slow on a busy disk)
        for i in range(n):
            os.mkdir(f"{work}/locks/fencegate/L{i:06d}")
    row = {"locks": n}
    row["ready_s"] = gw.start()
    c = gw.conn()
    rss0 = gw.rss_kb()
    row["locks_cold_ms"], _ = timed(lambda: gw.req("GET", f"{API}/locks?limit=1000", conn=c))
    row["locks_warm_ms"], _ = timed(lambda: gw.req("GET", f"{API}/locks?limit=1000", conn=c), 5)
    mid = fnv_cursor("l", f"L{n // 2:06d}")
    gw.req("GET", f"{API}/locks?limit=1000&after={mid}", conn=c)
    row["locks_mid_ms"], _ = timed(
        lambda: gw.req("GET", f"{API}/locks?limit=1000&after={mid}", conn=c), 5)
    row["fences_ms"], _ = timed(lambda: gw.req("GET", f"{API}/fences?limit=1000", conn=c), 5)
    fmid = fnv_cursor("f", f"L{n // 2:06d}")
    row["fences_mid_ms"], _ = timed(
        lambda: gw.req("GET", f"{API}/fences?limit=1000&after={fmid}", conn=c), 5)
    # every lock listed once: all loaded in memory
    after, t0 = None, time.perf_counter()
    while True:
        q = f"{API}/locks?limit=10000" + (f"&after={after}" if after else "")
        st, data = gw.req("GET", q, conn=c)
        j = json.loads(data)
        after = j["next"]
        if not after:
            break
    row["list_all_s"] = time.perf_counter() - t0
    row["rss_per_lock_b"] = (gw.rss_kb() - rss0) * 1024 / n
    row["store_disk_per_lock_b"] = du_disk(f"{work}/data") / n
    # acquire rate: new locks beside the fleet, one connection
    k = 300
    t0 = time.perf_counter()
    for i in range(k):
        acquire(gw, c, f"A{i:05d}")
    row["acquire_per_s"] = k / (time.perf_counter() - t0)
    row["dir_disk_per_lock_b"] = du_disk(f"{work}/locks/fencegate/A00000")
    c.close()
    # refusals on one of the fleet's own locks, the whole fleet loaded
    lock = f"L{n // 2:06d}"
    token = stale_token(gw, lock)
    row["refusals"] = [refusals(gw, token, conns, REFUSE_S, lock=lock) for conns in CONNS]
    # each was a refusal on that lock: its audit counted every one (identical
    # ones as counts of their run's record, none dropped by the lock's quota)
    a = audit_of(gw, f"lock={lock}")
    done = sum(x[3] for x in row["refusals"])
    counted = sum(r.get("count", 1) for r in a["records"])
    if a.get("next") or a["lock_dropped"] != 0 or counted != done:
        raise SystemExit(f"{lock}: {done} refusals, audit counted {counted} in "
                         f"{len(a['records'])} records, {a['lock_dropped']} dropped")
    gw.stop()
    row["restart_ready_s"] = gw.start()
    gw.stop()
    if keep:
        row["work"] = work
    else:
        shutil.rmtree(work, ignore_errors=True)
    return row


def acquire_round(gw, tag, k, lat=None):
    """k acquires of new locks on one connection; acquires/s.  lat: gets each one's ms."""
    c = gw.conn()
    t0 = time.perf_counter()
    for i in range(k):
        t1 = time.perf_counter()
        acquire(gw, c, f"R{tag}{i:05d}")
        if lat is not None:
            lat.append((time.perf_counter() - t1) * 1000)
    took = time.perf_counter() - t0
    c.close()
    return k / took


def backend_s(gw):
    """Seconds the election backend (the dir backend's files and directories) has taken, all
    operations: the sum of fencegate_election_backend_seconds."""
    st, data = gw.req("GET", "/metrics")
    assert st == 200, data
    return sum(float(line.split()[-1]) for line in data.decode().splitlines()
               if line.startswith("fencegate_election_backend_seconds_sum"))


def acquire_ratio(small, large):
    """The dir election's acquire rate beside two parent directories (small and
    large: (locks, work) pairs), in rounds that alternate between them with
    both gateways running, so that the VM's drift and bursts fall on both."""
    gws = []
    try:
        for n, work in (small, large):
            gws.append(Gw(work, {"audit": AUDIT}))
            gws[-1].start()
        rates, lats, be = ([], []), ([], []), [0.0, 0.0]
        for r in range(ROUNDS):
            # alternate which goes first: a slow stretch of the disk falls on both
            for side in ((0, 1) if r % 2 == 0 else (1, 0)):
                b0 = backend_s(gws[side])
                rates[side].append(acquire_round(gws[side], f"{r:02d}", ROUND_ACQUIRES,
                                                 lats[side]))
                be[side] += backend_s(gws[side]) - b0
        return rates, lats, be
    finally:
        for gw in gws:
            gw.stop()


def stale_token(gw, lock):
    c = gw.conn()
    g1 = acquire(gw, c, lock, "first")
    release(gw, c, g1)
    acquire(gw, c, lock, "second")
    c.close()
    return g1["token"]


def refuse_loop(gw, lock, token, stop, lat, counts, idx, source, spread):
    """Refused writes until stop: a stale token on lock, or (spread) a token
    never granted on a new lock of SPREAD_LOCKS each time."""
    c = gw.conn(source)
    n = 0
    while not stop.is_set():
        name = f"s{(idx * 7919 + n) % SPREAD_LOCKS:05d}" if spread else lock
        h = {"X-Fencing-Token": "999999" if spread else str(token), "X-Fencing-Lock": name,
             "Content-Length": "6"}
        t0 = time.perf_counter()
        st, _ = gw.req("PUT", f"/b/{'spread' if spread else lock}/{name}", b"zombie", h, c)
        lat.append((time.perf_counter() - t0) * 1000)
        if st != 409:
            raise SystemExit(f"expected 409, got {st}")
        n += 1
    counts[idx] = n
    c.close()


def refusals(gw, token, conns, secs, source="127.0.0.3", spread=0, lock="orders"):
    """conns connections from source, the last `spread` of them spread over many locks;
    (refusals/s, p50 ms, p99 ms, refusals)."""
    stop, lat, counts = threading.Event(), [], [0] * conns
    th = [threading.Thread(target=refuse_loop, args=(gw, lock, token, stop, lat, counts, i,
                                                     source, i >= conns - spread))
          for i in range(conns)]
    t0 = time.perf_counter()
    for t in th:
        t.start()
    time.sleep(secs)
    stop.set()
    for t in th:
        t.join()
    took = time.perf_counter() - t0
    lat.sort()
    return (sum(counts) / took, statistics.median(lat), lat[int(len(lat) * 0.99) - 1],
            sum(counts))


def audit_of(gw, query):
    st, data = gw.req("GET", f"{API}/audit?{query}&limit=1000")
    assert st == 200, data
    return json.loads(data)


def quiet_refusal(gw, token, key="k"):
    """One stale write on the quiet lock from 127.0.0.1; its request id (a
    key of its own each time: identical refusals would coalesce)."""
    c = gw.conn()
    c.request("PUT", f"/b/quiet/{key}", body=b"zombie",
              headers={"X-Fencing-Token": str(token), "X-Fencing-Lock": "quiet"})
    r = c.getresponse()
    r.read()
    c.close()
    assert r.status == 409
    return r.getheader("x-amz-request-id")


def main():
    root = tempfile.mkdtemp(prefix="fg-bench-scale-")
    try:
        print("locks    ready_s  /locks cold/warm/mid ms  /fences first/mid ms  list_all_s  "
              "RSS/lock B  store disk/lock B  acquire/s  dir disk/lock B  restart_ready_s")
        ratio = MKDIRS and len(SIZES) >= 2
        rows = []
        for n in SIZES:
            r = fleet(n, root, keep=ratio and n in (min(SIZES), max(SIZES)))
            rows.append(r)
            print(f"{r['locks']:>7}  {r['ready_s']:7.2f}  {r['locks_cold_ms']:7.1f} /"
                  f"{r['locks_warm_ms']:6.1f} /{r['locks_mid_ms']:6.1f}   "
                  f"{r['fences_ms']:8.1f} /{r['fences_mid_ms']:6.1f}     {r['list_all_s']:8.2f}  "
                  f"{r['rss_per_lock_b']:10.0f}  {r['store_disk_per_lock_b']:17.0f}  "
                  f"{r['acquire_per_s']:9.0f}  {r['dir_disk_per_lock_b']:15.0f}  "
                  f"{r['restart_ready_s']:15.2f}", flush=True)
        if ratio:
            small = next(r for r in rows if r["locks"] == min(SIZES))
            large = next(r for r in rows if r["locks"] == max(SIZES))
            rates, lats, be = acquire_ratio((small["locks"], small["work"]),
                                            (large["locks"], large["work"]))
            print(f"\ndir election: acquires/s of new locks, {ROUNDS} alternating rounds of "
                  f"{ROUND_ACQUIRES}, beside {small['locks']} and {large['locks']} lock "
                  f"directories")
            med = []
            for r, side in zip((small, large), rates):
                med.append(statistics.median(side))
                print(f"{r['locks']:>7}: " + " ".join(f"{x:6.1f}" for x in side) +
                      f"   median {med[-1]:6.1f}")
            # each round's pair ran back to back: its ratio cancels the drift between rounds
            pairs = [b / a for a, b in zip(*rates)]
            print(f"ratio {large['locks']} / {small['locks']}: of the medians "
                  f"{med[1] / med[0]:.2f}; "
                  f"per round " + " ".join(f"{x:.2f}" for x in pairs) +
                  f", their median {statistics.median(pairs):.2f}")
            # the rate is a mean, swayed by a few long fsync stalls; the median acquire is not
            p50 = [statistics.median(x) for x in lats]
            print(f"median acquire: {p50[0]:.2f} ms beside {small['locks']}, {p50[1]:.2f} ms "
                  f"beside {large['locks']} (as a rate ratio {p50[0] / p50[1]:.2f})")
            # where the time goes: the dir backend's own calls (its directories and epoch
            # files, fsyncs included) against the rest (the store's commit, HTTP, waiting)
            for r, x, b in zip((small, large), lats, be):
                mean, back = statistics.mean(x), b * 1000 / len(x)
                print(f"mean acquire beside {r['locks']}: {mean:.2f} ms, of it the dir backend "
                      f"{back:.2f} ms, the rest {mean - back:.2f} ms")
            sys.stdout.flush()
            for r in (small, large):
                shutil.rmtree(r["work"], ignore_errors=True)
        work = tempfile.mkdtemp(prefix="fg-refuse-", dir=root)
        gw = Gw(work, {"audit": AUDIT})
        gw.start()
        token = stale_token(gw, "orders")
        quiet = stale_token(gw, "quiet")
        before = quiet_refusal(gw, quiet)
        rows.append({"locks": 2, "refusals": [refusals(gw, token, conns, REFUSE_S)
                                              for conns in CONNS]})
        print("\nrefusals: stale writes on one lock (the fleet's middle one; 2 = a fresh "
              "gateway's own), audit committed before each 409")
        print("  locks  conns  refusals/s  p50 ms  p99 ms")
        for r in sorted(rows, key=lambda r: r["locks"]):
            for conns, (rate, p50, p99, _) in zip(CONNS, r["refusals"]):
                print(f"{r['locks']:>7}  {conns:5}  {rate:10.0f}  {p50:6.1f}  {p99:6.1f}")
        sys.stdout.flush()
        print(f"\naudit flood: {FLOOD_S:.0f} s from one client (127.0.0.2), 8 connections: 4 on "
              f"one lock, 4 spread over {SPREAD_LOCKS} locks; " +
              ", ".join(f"{k} {v}" for k, v in AUDIT.items()))
        box = {}
        th = threading.Thread(target=lambda: box.update(
            r=refusals(gw, token, 8, FLOOD_S, source="127.0.0.2", spread=4)))
        th.start()
        time.sleep(min(1.0, FLOOD_S / 2))
        during = quiet_refusal(gw, quiet, "k2")
        th.join()
        rate, p50, p99, _ = box["r"]
        a = audit_of(gw, "lock=orders")
        f = audit_of(gw, "principal=@127.0.0.2")
        q = audit_of(gw, "lock=quiet")
        ids = [r["request_id"] for r in q["records"]]
        print(f"flood: {rate:.0f} refusals/s (p50 {p50:.1f} ms, p99 {p99:.1f} ms)")
        print(f"  the flood's lock kept {a['lock_kept']}, dropped {a['lock_dropped']} "
              f"(of this run's {a['lock_kept'] + a['lock_dropped']} records on it); its first "
              f"{len(a['records'])} records count {sum(r['count'] for r in a['records'])} "
              "refusals (identical ones coalesce)")
        print(f"  the flooding client kept {f['principal_kept']}, dropped "
              f"{f['principal_dropped']}")
        print(f"  the quiet client's lock kept {q['lock_kept']}; its oldest record (before the "
              f"flood) {'still there' if before in ids else 'GONE'}, the one during the flood "
              f"{'still there' if during in ids else 'GONE'}")
        gw.stop()
    finally:
        for gw in GATEWAYS:
            gw.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
