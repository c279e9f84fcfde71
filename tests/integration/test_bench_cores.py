"""make bench-cores's harness works end to end, so that a broken benchmark
shows in CI rather than on the day someone runs it on a large machine: a
one-second run at N=1 through the gateway and nginx to the sink origin
(tests/bench/sink_origin.c) prints its table, having checked that a PUT
lands whole and that a PUT refused for its payload hash never reaches the
origin whole; and the sink itself counts a whole body, and not one whose
connection dies midway.  No RGW: the origin is the sink (or nginx's dav)."""

import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import free_port

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FENCEGATE_BUILD", REPO / "build"))
SINK = BUILD / "tests" / "bench" / "sink_origin"

pytestmark = pytest.mark.slow  # a gateway streaming 1 MiB bodies: not under the sanitizers


def _tools():
    for t in ("wrk", "curl", "taskset"):
        assert shutil.which(t), f"{t} missing (make deps installs it)"
    assert os.path.exists("/usr/sbin/nginx"), "nginx missing (make deps installs nginx-light)"
    assert SINK.exists(), f"{SINK} missing (make {SINK.relative_to(BUILD.parent)})"


@pytest.mark.parametrize("origin", ["sink", "dav"])
def test_bench_cores_runs(origin, tmp_path):
    _tools()
    env = dict(os.environ, BENCH_SECS="1", BENCH_REPEATS="1", BENCH_ORIGIN=origin,
               BENCH_SINK=str(SINK), BENCH_TMP=str(tmp_path),
               FENCEGATE_BIN=os.environ.get("FENCEGATE_BIN", str(BUILD / "fencegate")),
               PYTHON3="/usr/bin/python3")
    r = subprocess.run(["bash", str(REPO / "tests" / "bench" / "cores_bench.sh"), "1"], env=env,
                       capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"to the {origin} origin" in r.stdout, r.stdout
    for target in ("gw", "nginx"):
        m = re.search(rf"^\| {target} \| 1 \| \d+ \| ([0-9.]+) \|.*\| ([0-9]+) \(([0-9]+) \+ ([0-9]+)\) \| "
                      r"([0-9]+) \| ([0-9.]+)x \|$", r.stdout, re.M)
        assert m, f"no {target} row: {r.stdout}"
        rps, load, wrk, org, ceiling, _ = (float(g) for g in m.groups())
        assert rps > 0 and ceiling > 0, m.group(0)
        assert wrk > 0 and org > 0 and abs(load - wrk - org) <= 1, m.group(0)  # each rounded
    assert list(tmp_path.iterdir()) == [], "the bench left its folder behind"


def _stats(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/sink-stats", timeout=5) as r:
        return [int(x) for x in r.read().split()]


def test_sink_counts_only_whole_bodies(tmp_path):
    assert SINK.exists()
    port = free_port()
    p = subprocess.Popen([str(SINK), str(port), str(tmp_path / "sink.pid")],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            if (tmp_path / "sink.pid").exists():
                break
            time.sleep(0.05)
        assert int((tmp_path / "sink.pid").read_text()) == p.pid
        body = os.urandom(1 << 20)
        req = urllib.request.Request(f"http://127.0.0.1:{port}/b/k", data=body, method="PUT")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200 and r.headers["ETag"] == '"sink-1"'
        assert _stats(port) == [1, 1 << 20, 1 << 20]
        # a body cut short by its connection's end is not a request served
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"x" * 999)
        s.close()
        time.sleep(0.2)
        assert _stats(port) == [1, 1 << 20, 1 << 20]
        # two requests on one connection, the second's head in the first's last read
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"PUT /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcPUT /b HTTP/1.1\r\n"
                  b"content-length: 2\r\n\r\nde")
        got = b""
        while got.count(b"HTTP/1.1 200") < 2:
            chunk = s.recv(4096)
            assert chunk, got
            got += chunk
        s.close()
        assert _stats(port) == [3, 2, (1 << 20) + 5]
        # chunked bodies are not counted: 400 and the connection closed
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 400")
        assert s.recv(4096) == b""
        s.close()
        assert _stats(port)[0] == 3
    finally:
        p.terminate()
        p.wait(timeout=10)
