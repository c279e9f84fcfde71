"""G2 under SIGKILL: the highest fencing token never goes back.

tests/helpers/store_crash.c advances a token in a loop and prints each value
whose advance returned success (durable: fsync'd).  We kill it with SIGKILL at
random moments, many times, alternating the synchronous path and the worker's
grouped path, and after each kill reopen the store: it must open cleanly, read
back without damage, and hold a highest token >= the last one printed.

No RGW needed.  FENCEGATE_BUILD names the build dir (build, build/san, ...).
"""

import os
import random
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FENCEGATE_BUILD", ROOT / "build"))
HELPER = BUILD / "tests" / "helpers" / "store_crash"
ROUNDS = int(os.environ.get("STORE_CRASH_ROUNDS", "30"))


def verify(data_dir):
    """Open the store as a restarted gateway would; return (highest, audits)."""
    p = subprocess.run([str(HELPER), "verify", data_dir], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, f"store did not reopen cleanly: {p.stderr}"
    highest, audits = p.stdout.split()
    return int(highest), int(audits)


@pytest.mark.parametrize("seed", [20261121])
def test_sigkill_never_lowers_highest(seed):
    if not HELPER.exists():
        pytest.fail(f"{HELPER} is not built: run `make {HELPER.relative_to(ROOT)}`")
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="fencegate-crash-") as d:
        floor = 0
        printed_total = 0
        for rnd in range(ROUNDS):
            mode = "async" if rnd % 2 else "sync"
            p = subprocess.Popen([str(HELPER), "run", d, mode],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            # Sometimes kill before the first advance can finish, mostly after.
            time.sleep(rng.choice([0.0, 0.002]) if rnd % 5 == 0 else rng.uniform(0.01, 0.25))
            p.send_signal(signal.SIGKILL)
            out, err = p.communicate(timeout=30)
            assert p.returncode == -signal.SIGKILL, (
                f"round {rnd} ({mode}): helper exited {p.returncode}: {err.decode()}")
            lines = out.decode().split()
            # A kill can cut the last line short: only whole lines count.
            if out and not out.endswith(b"\n"):
                lines = lines[:-1]
            values = [int(x) for x in lines]
            assert values == sorted(values)
            last = values[-1] if values else 0
            printed_total += len(values)
            highest, _ = verify(d)
            assert highest >= last, (
                f"round {rnd} ({mode}): highest {highest} < last acknowledged {last}")
            assert highest >= floor, f"round {rnd}: highest went back from {floor} to {highest}"
            floor = highest
        assert printed_total > ROUNDS, "the helper hardly advanced; kills were too early"
        # the audit log kept its count cap through every kill
        _, audits = verify(d)
        assert audits <= 20000
