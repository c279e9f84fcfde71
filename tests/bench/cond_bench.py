"""Cost of conditional writes (README "Conditional writes"): fenced PUTs of
1 KiB and 1 MiB through one gateway on RGW, with fencing.conditional_writes
off, on with the key's ETag in the map (hit), and on with a HEAD first
(miss: a new key every time).  Sequential requests on one connection, so
the figures are latencies; run on a quiet machine and read the ratios.

    FENCEGATE_BIN=build/fencegate /usr/bin/python3 tests/bench/cond_bench.py \
        [--rgw-env FILE] [--n-small 300] [--n-large 40]
"""
import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
import conftest  # noqa: E402


def run(gw, bucket, token, size, n, fresh_keys):
    s = requests.Session()
    body = b"x" * size
    hdr = {"X-Fencing-Token": str(token), "X-Fencing-Lock": "bench"}
    lat = []
    for i in range(n + 5):
        key = f"b/{uuid.uuid4().hex}" if fresh_keys else "b/same"
        t = time.perf_counter()
        r = s.put(f"{gw.url}/{bucket}/{key}", data=body, headers=hdr, timeout=60)
        dt = time.perf_counter() - t
        assert r.status_code == 200, r.text
        if i >= 5:  # warm-up
            lat.append(dt * 1000)
    lat.sort()
    return statistics.median(lat), lat[int(len(lat) * 0.99) - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rgw-env")
    ap.add_argument("--n-small", type=int, default=300)
    ap.add_argument("--n-large", type=int, default=40)
    a = ap.parse_args()
    env = conftest.read_env_file(a.rgw_env)
    rgw = conftest.Rgw(env, a.rgw_env)
    bucket = f"bench-cond-{uuid.uuid4().hex[:8]}"
    rgw.client().create_bucket(Bucket=bucket)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for mode in ("off", "auto"):
            cfg = {"election": {"backend": "dir", "path": f"{d}/locks-{mode}",
                                "min_lease_ms": 200},
                   "fences": [{"bucket": bucket, "prefix": "b/", "lock": "bench"}],
                   "fencing": {"conditional_writes": mode, "commit_margin_ms": 100,
                               "complete_margin_ms": 200}}
            gw = conftest.Gateway(rgw, f"{d}/gw-{mode}", cfg)
            gw.start(wait=True)
            try:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    if requests.get(f"{gw.url}/readyz", timeout=5).status_code == 200:
                        break
                    time.sleep(0.05)
                time.sleep(0.5)  # the start-up gate and the probe
                r = requests.post(f"{gw.url}/_fencegate/v1/locks/bench/acquire",
                                  json={"holder": "b", "lease_ms": 300000}, timeout=30)
                token = r.json()["token"]
                for size, n in ((1024, a.n_small), (1 << 20, a.n_large)):
                    cases = [("off", False)] if mode == "off" else [("on, hit", False),
                                                                    ("on, miss", True)]
                    for name, fresh in cases:
                        med, p99 = run(gw, bucket, token, size, n, fresh)
                        rows.append((size, name, med, p99))
            finally:
                gw.stop()
    print("| fenced PUT | conditional writes | median ms | p99 ms |")
    print("| --- | --- | ---: | ---: |")
    for size, name, med, p99 in rows:
        label = "1 KiB" if size == 1024 else "1 MiB"
        print(f"| {label} | {name} | {med:.2f} | {p99:.2f} |")


if __name__ == "__main__":
    main()
