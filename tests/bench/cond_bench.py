"""Cost of conditional writes (README "Conditional writes"): fenced PUTs of
1 KiB and 1 MiB through one gateway on RGW, with fencing.conditional_writes
off, on with the key's ETag in the map (hit), and on with a HEAD first
(miss: a new key every time).  Sequential requests on one connection, so
the figures are latencies; run on a quiet machine and read the ratios (the
"vs off" column: each row's median over the "off" row's of the same size).
Both gateways run side by side, and the three cases take turns in rounds,
so drift on a shared machine hits them alike.
The "on" gateway runs with conditional_writes "on" and is measured only once
its probe has answered (the gauge fencegate_conditional_writes is 1), so
every write of the "on" rows carries a condition.  `make bench-proxy-rgw`
runs it on its own RGW, after its other figures.

    FENCEGATE_BIN=build/fencegate /usr/bin/python3 tests/bench/cond_bench.py \
        [--rgw-env FILE] [--n-small 300] [--n-large 40]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
# the single-loop figures of docs/PERFORMANCE.md: conftest gives gateways 2 loops otherwise
os.environ.setdefault("FG_TEST_WORKERS", "1")
import conftest  # noqa: E402


def run(s, gw, bucket, prefix, token, size, n, fresh_keys):
    """n fenced PUTs of size bytes on session s: their latencies in ms."""
    body = b"x" * size
    hdr = {"X-Fencing-Token": str(token), "X-Fencing-Lock": "bench"}
    lat = []
    for _ in range(n):
        key = f"{prefix}/{uuid.uuid4().hex}" if fresh_keys else f"{prefix}/same"
        t = time.perf_counter()
        r = s.put(f"{gw.url}/{bucket}/{key}", data=body, headers=hdr, timeout=60)
        dt = time.perf_counter() - t
        assert r.status_code == 200, r.text
        lat.append(dt * 1000)
    return lat


def start(rgw, d, bucket, mode):
    """A gateway with conditional_writes mode, fencing bucket/mode/ under the
    lock "bench", ready (and for "on", its probe answered); and a token."""
    cfg = {"election": {"backend": "dir", "path": f"{d}/locks-{mode}", "min_lease_ms": 200},
           "fences": [{"bucket": bucket, "prefix": f"{mode}/", "lock": "bench"}],
           "fencing": {"conditional_writes": mode, "commit_margin_ms": 100,
                       "complete_margin_ms": 200}}
    gw = conftest.Gateway(rgw, f"{d}/gw-{mode}", cfg)
    gw.start(wait=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if requests.get(f"{gw.url}/readyz", timeout=5).status_code == 200:
            break
        time.sleep(0.05)
    while time.monotonic() < deadline:  # the probe's answer
        m = requests.get(f"{gw.url}/metrics", timeout=5).text
        if mode == "off" or "\nfencegate_conditional_writes 1" in m:
            break
        time.sleep(0.05)
    else:
        gw.stop()
        sys.exit("cond_bench: the probe did not turn conditional writes on")
    r = requests.post(f"{gw.url}/_fencegate/v1/locks/bench/acquire",
                      json={"holder": "b", "lease_ms": 300000}, timeout=30)
    return gw, r.json()["token"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rgw-env")
    ap.add_argument("--n-small", type=int, default=300)
    ap.add_argument("--n-large", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=5,
                    help="the cases take turns, n / rounds requests each per round")
    a = ap.parse_args()
    env = conftest.read_env_file(a.rgw_env)
    rgw = conftest.Rgw(env, a.rgw_env)
    bucket = f"bench-cond-{uuid.uuid4().hex[:8]}"
    rgw.client().create_bucket(Bucket=bucket)
    cases = (("off", "off", False), ("on, hit", "on", False), ("on, miss", "on", True))
    lat = {}
    with tempfile.TemporaryDirectory() as d:
        gws = {}
        try:
            for mode in ("off", "on"):
                gws[mode] = start(rgw, d, bucket, mode)
            sessions = {name: requests.Session() for name, _, _ in cases}
            for size, n in ((1024, a.n_small), (1 << 20, a.n_large)):
                for name, mode, fresh in cases:  # warm-up: connections, the hit's ETag
                    gw, token = gws[mode]
                    run(sessions[name], gw, bucket, mode, token, size, 5, fresh)
                # rounds of off, hit, miss: drift on a shared machine hits all alike
                for _ in range(a.rounds):
                    for name, mode, fresh in cases:
                        gw, token = gws[mode]
                        lat.setdefault((size, name), []).extend(
                            run(sessions[name], gw, bucket, mode, token, size,
                                max(1, n // a.rounds), fresh))
        finally:
            for gw, _ in gws.values():
                gw.stop()
    print("| fenced PUT | conditional writes | median ms | p99 ms | vs off |")
    print("| --- | --- | ---: | ---: | ---: |")
    for size in (1024, 1 << 20):
        off = statistics.median(lat[(size, "off")])
        for name, _, _ in cases:
            ls = sorted(lat[(size, name)])
            med, p99 = statistics.median(ls), ls[max(0, int(len(ls) * 0.99) - 1)]
            label = "1 KiB" if size == 1024 else "1 MiB"
            print(f"| {label} | {name} | {med:.2f} | {p99:.2f} | {med / off:.2f} |")


if __name__ == "__main__":
    main()
