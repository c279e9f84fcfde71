#!/usr/bin/python3
"""What write windows cost and how long hand-overs take (README "Write windows").

Boots a Ceph RGW on loopback and fencegate gateways with their default
fencing settings (commit margin 1000 ms, complete margin 3000 ms, shared
window 5000 ms), and prints:

  * epoch-file reads per lock per gateway per second while a holder renews at
    a third of its lease and writes through the gateway that granted it and
    through another one (fencegate_write_window_reads_total from /metrics);
  * hand-over after a release: a single gateway (dir backend, not shared) and
    a shared s3 election;
  * hand-over after a lease ran out (time from the last renewal to the grant);
  * the first fenced write after a kill -9 and restart (the start gate).

Run: make bench-windows (about 2 minutes).  Every process it starts is
stopped by PID on exit.
"""
import atexit
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))
# the single-loop figures of docs/PERFORMANCE.md: conftest gives gateways 2 loops otherwise
os.environ.setdefault("FG_TEST_WORKERS", "1")
import conftest as C  # noqa: E402  (the integration harness: Rgw, Gateway)
import requests  # noqa: E402

LOCK = "orders"
DURATION = float(os.environ.get("BENCH_SECONDS", "30"))


def boot_rgw():
    d = tempfile.mkdtemp(prefix="fg-bench-rgw-")
    atexit.register(lambda: subprocess.run(["bash", str(C.RGW_SH), "stop", d], timeout=60,
                                           check=False))
    subprocess.run(["bash", str(C.RGW_SH), "start", d], check=True, capture_output=True,
                   text=True, timeout=120)
    return C.Rgw(C.read_env_file(Path(d) / "env"), Path(d) / "env", d, owned=True)


def gateway(rgw, work, name, overrides):
    # "fencing": None drops the test harness's small margins: the defaults are measured
    gw = C.Gateway(rgw, work / name, dict(overrides, fencing=None), name=name)
    gw.start()
    atexit.register(gw.stop)
    deadline = time.monotonic() + 30
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline, "gateway not ready"
        time.sleep(0.05)
    return gw


def api(gw, path, body):
    r = requests.post(f"{gw.url}/_fencegate/v1/locks/{path}", json=body, timeout=120)
    return r


def metric(gw, name):
    for line in requests.get(f"{gw.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    return 0


def put(gw, bucket, key, token):
    return requests.put(f"{gw.url}/{bucket}/{key}", data=b"x" * 128,
                        headers={"X-Fencing-Token": str(token), "X-Fencing-Lock": LOCK},
                        timeout=30)


def window_cost(rgw, work, bucket, locks):
    cfg = {"election": {"backend": "s3", "bucket": locks},
           "fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK}]}
    a = gateway(rgw, work, "cost-a", dict(cfg, gateway_id="cost-a"))
    b = gateway(rgw, work, "cost-b", dict(cfg, gateway_id="cost-b"))
    lease = 15000
    g = api(a, f"{LOCK}/acquire", {"holder": "w", "lease_ms": lease}).json()
    r0 = {gw.name: metric(gw, "fencegate_write_window_reads_total") for gw in (a, b)}
    t0 = time.monotonic()
    next_renew = t0 + lease / 3000
    writes = {a.name: 0, b.name: 0}
    i = 0
    while time.monotonic() - t0 < DURATION:
        if time.monotonic() >= next_renew:
            assert api(a, f"{LOCK}/renew", {"token": g["token"],
                                             "lease_id": g["lease_id"]}).status_code == 200
            next_renew += lease / 3000
        gw = (a, b)[i % 2]
        r = put(gw, bucket, f"orders/{i % 16}", g["token"])
        assert r.status_code == 200, r.text
        writes[gw.name] += 1
        i += 1
        time.sleep(0.02)
    secs = time.monotonic() - t0
    rows = []
    for gw in (a, b):
        reads = metric(gw, "fencegate_write_window_reads_total") - r0[gw.name]
        role = "granted and renews" if gw is a else "reads only"
        rows.append((gw.name, role, writes[gw.name], reads, reads / secs))
    api(a, f"{LOCK}/release", {"token": g["token"], "lease_id": g["lease_id"]})
    a.stop()
    b.stop()
    return secs, rows


def handover_release(rgw, work, bucket, locks, backend):
    if backend == "dir":
        ecfg = {"backend": "dir", "path": str(work / "hand-locks")}
    else:
        ecfg = {"backend": "s3", "bucket": locks, "prefix": "hand/"}
    gw = gateway(rgw, work, f"hand-{backend}", {"election": ecfg, "gateway_id": "hand"})
    g = api(gw, f"{LOCK}/acquire", {"holder": "a", "lease_ms": 15000}).json()
    api(gw, f"{LOCK}/release", {"token": g["token"], "lease_id": g["lease_id"]})
    t0 = time.monotonic()
    r = api(gw, f"{LOCK}/acquire", {"holder": "b", "lease_ms": 15000, "wait_ms": 30000})
    took = time.monotonic() - t0
    assert r.status_code == 200, r.text
    gw.stop()
    return took


def handover_expiry(rgw, work, locks):
    gw = gateway(rgw, work, "expiry", {"election": {"backend": "s3", "bucket": locks,
                                                    "prefix": "exp/"}, "gateway_id": "exp"})
    lease = 6000
    g = api(gw, f"{LOCK}/acquire", {"holder": "a", "lease_ms": lease}).json()
    api(gw, f"{LOCK}/renew", {"token": g["token"], "lease_id": g["lease_id"]})
    t_last = time.monotonic()
    r = api(gw, f"{LOCK}/acquire", {"holder": "b", "lease_ms": lease, "wait_ms": 60000})
    took = time.monotonic() - t_last
    assert r.status_code == 200, r.text
    gw.stop()
    return lease, took


def restart_gate(rgw, work, bucket, locks):
    gw = gateway(rgw, work, "restart", {
        "election": {"backend": "s3", "bucket": locks, "prefix": "rst/"}, "gateway_id": "rst",
        "fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK}]})
    g = api(gw, f"{LOCK}/acquire", {"holder": "a", "lease_ms": 15000}).json()
    assert put(gw, bucket, "orders/r", g["token"]).status_code == 200
    gw.kill9()
    gw.restart(wait=True)
    t0 = time.monotonic()
    r = put(gw, bucket, "orders/r", g["token"])
    took = time.monotonic() - t0
    assert r.status_code == 200, r.text
    gw.stop()
    return took


def main():
    rgw = boot_rgw()
    work = Path(tempfile.mkdtemp(prefix="fg-bench-windows-"))
    c = rgw.client()
    bucket, locks = C.unique_bucket_name("fgb"), C.unique_bucket_name("fgl")
    c.create_bucket(Bucket=bucket)
    c.create_bucket(Bucket=locks)
    secs, rows = window_cost(rgw, work, bucket, locks)
    print(f"write windows, {secs:.0f} s, one lock, lease 15 s renewed every 5 s, "
          "writes alternating between two gateways (shared s3 election, defaults)")
    print("| gateway | role | writes | epoch-file reads | reads/s |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, role, w, reads, rate in rows:
        print(f"| {name} | {role} | {w} | {reads} | {rate:.2f} |")
    single = handover_release(rgw, work, bucket, locks, "dir")
    shared = handover_release(rgw, work, bucket, locks, "s3")
    lease, expiry = handover_expiry(rgw, work, locks)
    gate = restart_gate(rgw, work, bucket, locks)
    print()
    print("| hand-over | seconds |")
    print("| --- | ---: |")
    print(f"| after a release, single gateway (dir, not shared) | {single:.2f} |")
    print(f"| after a release, shared s3 election | {shared:.2f} |")
    print(f"| after a lease ran out (lease {lease / 1000:.0f} s), from the last renewal | "
          f"{expiry:.2f} |")
    print(f"| first fenced write after kill -9 and restart | {gate:.2f} |")


if __name__ == "__main__":
    main()
