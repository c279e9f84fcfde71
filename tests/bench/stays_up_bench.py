#!/usr/bin/python3
"""Normal clients beside hostile ones (README "Staying up", DESIGN G10).

Boots a Ceph RGW on loopback and one fencegate with its DEFAULT limits, then
measures normal traffic twice, for BENCH_SECONDS each (default 20):

  baseline  normal clients alone;
  abuse     the same normal clients beside
            - 2,000 half-open connections (a head begun, never finished),
              100 from each of 20 addresses 127.0.1.1-20,
            - 300 slow uploaders from 127.0.0.3, each PUT sending one byte
              every 5 s (reconnecting when cut or refused),
            - a 4,000-connection flood of silent connections from 127.0.0.1
              (each reconnecting 5 s after the gateway closes it).

Normal clients: BENCH_CLIENTS threads (default 4) in their own process,
each with a kept-alive connection from 127.0.0.2, each sending one request
every 20 ms (3 GETs of a 4 KiB object, then a 4 KiB PUT).  A failed request
(an error status, a reset, a timeout of 10 s) counts as an error.

Prints p50/p99/max latency and errors for both runs and whether the goal
holds: p99 under abuse within 2x of the baseline's, no errors.  The soft
RLIMIT_NOFILE is raised to the hard limit (the gateway inherits it): about
6,500 descriptors are needed on each side.

Run: make bench-stays-up (about 2 minutes).  Every process it starts is
stopped by PID on exit.  Loopback only.
"""
import asyncio
import atexit
import http.client
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DURATION = float(os.environ.get("BENCH_SECONDS", "20"))
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "4"))
NORMAL_ADDR = "127.0.0.2"
N_HALF, N_SLOW, N_FLOOD = 2000, 300, 4000
BODY = b"n" * 4096


# ---- the normal clients (a child process: their timing is not the attackers' event loop) ----


def normal_main(host, port, bucket, seconds):
    lat, errors, lock = [], [0], threading.Lock()
    end = time.monotonic() + seconds

    def client(idx):
        conn = None
        i = 0
        next_t = time.monotonic()
        while time.monotonic() < end:
            next_t += 0.02
            if conn is None:
                conn = http.client.HTTPConnection(host, port, timeout=10,
                                                  source_address=(NORMAL_ADDR, 0))
            put = i % 4 == 3
            t0 = time.monotonic()
            try:
                if put:
                    conn.request("PUT", f"/{bucket}/n{idx}-{i}", body=BODY)
                else:
                    conn.request("GET", f"/{bucket}/small")
                r = conn.getresponse()
                data = r.read()
                ok = r.status == 200 and (put or data == BODY)
            except (OSError, http.client.HTTPException):
                ok = False
            took = (time.monotonic() - t0) * 1000
            with lock:
                lat.append(took)
                if not ok:
                    errors[0] += 1
            if not ok:
                conn.close()
                conn = None
            i += 1
            time.sleep(max(0.0, next_t - time.monotonic()))
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lat.sort()

    def pct(p):
        return lat[min(len(lat) - 1, int(len(lat) * p))] if lat else 0.0

    print(json.dumps({"n": len(lat), "errors": errors[0], "p50": pct(0.50), "p99": pct(0.99),
                      "max": lat[-1] if lat else 0.0}))


# ---- the attackers (a child process, asyncio) ----


async def hold(host, port, src, first, delay, stats, key):
    """Connect from src, send first, keep the connection open; when the
    gateway closes it, reconnect after delay.  Forever."""
    while True:
        try:
            r, w = await asyncio.open_connection(host, port, local_addr=(src, 0))
        except OSError:
            stats["connect_errors"] += 1
            await asyncio.sleep(delay)
            continue
        stats[key] += 1
        try:
            if first:
                w.write(first)
            while await r.read(65536):
                pass  # an answer (a refusal): the gateway closes next
        except OSError:
            pass
        w.close()
        await asyncio.sleep(delay)


async def slow_upload(host, port, bucket, i, stats):
    """PUT one byte every 5 s; reconnect when answered or cut."""
    while True:
        try:
            r, w = await asyncio.open_connection(host, port, local_addr=("127.0.0.3", 0))
        except OSError:
            stats["connect_errors"] += 1
            await asyncio.sleep(1)
            continue
        stats["slow"] += 1
        w.write(f"PUT /{bucket}/slow{i} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Content-Length: 1000000\r\n\r\n".encode())
        try:
            while True:
                w.write(b"x")
                await w.drain()
                try:
                    data = await asyncio.wait_for(r.read(65536), 5)
                except asyncio.TimeoutError:
                    continue
                if not data or b"HTTP/1.1" in data:
                    head = data.split(b"\r\n", 1)[0].decode("latin-1", "replace")
                    stats["slow_answers"][head] = stats["slow_answers"].get(head, 0) + 1
                    break
        except OSError:
            pass
        w.close()
        await asyncio.sleep(0.5)


async def abuse_async(host, port, bucket):
    stats = {"half": 0, "slow": 0, "flood": 0, "connect_errors": 0, "slow_answers": {}}
    tasks = []
    half_head = f"GET /{bucket}/small HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
    for k in range(N_HALF):
        src = f"127.0.1.{1 + k % 20}"
        tasks.append(asyncio.create_task(hold(host, port, src, half_head, 1.0, stats, "half")))
    for i in range(N_SLOW):
        tasks.append(asyncio.create_task(slow_upload(host, port, bucket, i, stats)))
    for _ in range(N_FLOOD):
        tasks.append(asyncio.create_task(hold(host, port, "127.0.0.1", b"", 5.0, stats, "flood")))
    await asyncio.sleep(3)
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    print(json.dumps(stats), flush=True)
    os._exit(0)


# ---- the driver ----


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def child(args):
    p = subprocess.Popen([sys.executable, __file__] + args, stdout=subprocess.PIPE, text=True)
    atexit.register(lambda: p.poll() is None and p.kill())
    return p


def run_normal(gw, bucket):
    p = child(["normal", "127.0.0.1", str(gw.port), bucket, str(DURATION)])
    out, _ = p.communicate(timeout=DURATION + 60)
    return json.loads(out.strip().splitlines()[-1])


def metrics(gw):
    """/metrics, from an address of its own (127.0.0.1 is the flood's)."""
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10,
                                      source_address=("127.0.0.4", 0))
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    except (OSError, http.client.HTTPException) as e:
        print(f"/metrics: {e!r}", flush=True)  # an older gateway under the flood
        return {}
    finally:
        conn.close()
    out = {}
    for line in text.splitlines():
        if line.startswith("fencegate_") and " " in line and "{" not in line:
            k, v = line.split(" ", 1)
            out[k[len("fencegate_"):]] = int(v)
    return out


def main():
    sys.path.insert(0, str(HERE.parent / "integration"))
    # the single-loop figures of docs/PERFORMANCE.md: conftest gives gateways 2 loops otherwise
    os.environ.setdefault("FG_TEST_WORKERS", "1")
    import conftest as C
    import requests

    nofile = raise_nofile()
    need = N_HALF + N_SLOW + N_FLOOD + 200
    if nofile < need:
        sys.exit(f"RLIMIT_NOFILE hard limit {nofile} < {need}: raise it (ulimit -Hn)")
    d = tempfile.mkdtemp(prefix="fg-bench-rgw-")
    atexit.register(lambda: subprocess.run(["bash", str(C.RGW_SH), "stop", d], timeout=60,
                                           check=False))
    subprocess.run(["bash", str(C.RGW_SH), "start", d], check=True, capture_output=True,
                   text=True, timeout=180)
    rgw = C.Rgw(C.read_env_file(Path(d) / "env"), Path(d) / "env", d, owned=True)
    bucket = "stays-up-bench"
    s3 = rgw.client()
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="small", Body=BODY)
    work = Path(tempfile.mkdtemp(prefix="fg-bench-gw-"))
    # default limits: max_connections 4096 (1,024 per address), 128 transfers per
    # address, min_body_rate 1024 B/s over 10 s; fencing None: no test margins
    gw = C.Gateway(rgw, work / "gw", {"fencing": None, "log_level": "warn"}, name="gw")
    gw.start()
    atexit.register(gw.stop)
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        time.sleep(0.05)
    print(f"RLIMIT_NOFILE {nofile}; {CLIENTS} normal clients at 50 req/s each, "
          f"{DURATION:.0f} s per run", flush=True)

    base = run_normal(gw, bucket)
    ab = child(["abuse", "127.0.0.1", str(gw.port), bucket])
    line = ab.stdout.readline()
    assert line.strip() == "ready", line
    m0 = metrics(gw)
    under = run_normal(gw, bucket)
    m1 = metrics(gw)
    ab.send_signal(signal.SIGTERM)
    stats = json.loads(ab.stdout.readline())
    ab.wait(30)

    print(f"{'run':<10}{'requests':>10}{'errors':>8}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, r in (("baseline", base), ("abuse", under)):
        print(f"{name:<10}{r['n']:>10}{r['errors']:>8}{r['p50']:>10.1f}{r['p99']:>10.1f}"
              f"{r['max']:>10.1f}")
    print(f"attackers' connections opened: {stats['half']} half-open, {stats['slow']} slow "
          f"uploads, {stats['flood']} flood ({stats['connect_errors']} connect errors)")
    print(f"slow uploads answered: {stats['slow_answers']}")
    for k in ("client_connections_refused_total", "client_transfers_refused_total",
              "slow_bodies_cut_total", "idle_connections_shed_total"):
        print(f"  fencegate_{k} during the abuse run: {m1.get(k, 0) - m0.get(k, 0)}")
    ratio = under["p99"] / base["p99"] if base["p99"] > 0 else float("inf")
    ok = ratio <= 2.0 and under["errors"] == 0 and base["errors"] == 0
    print(f"p99 abuse / baseline = {ratio:.2f}; goal (<= 2x, no errors): "
          f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "normal":
        normal_main(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
    elif len(sys.argv) > 1 and sys.argv[1] == "abuse":
        raise_nofile()
        asyncio.run(abuse_async(sys.argv[2], int(sys.argv[3]), sys.argv[4]))
    else:
        sys.exit(main())
