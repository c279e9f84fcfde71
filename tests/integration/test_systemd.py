"""systemd readiness (sd_notify) and the data dir's format version.

A Unix datagram socket of the test's own stands in for systemd: the gateway
is started with NOTIFY_SOCKET naming it, and the test reads what arrives, in
order, as systemd would.
"""

import hashlib
import os
import signal
import socket
import subprocess
import time

import pytest
import requests

from conftest import gateway_bin


def _notify_socket(tmp_path):
    path = str(tmp_path / "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(0.2)
    return s, path


def _read_until(sock, want, timeout=15.0):
    """Datagrams (as dicts) until one has `want` set, or the timeout."""
    got = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            data = sock.recv(4096)
        except socket.timeout:
            continue
        kv = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
        got.append(kv)
        if want in kv:
            return got
    raise AssertionError(f"no {want} from the gateway in {timeout}s; got {got}")


@pytest.mark.parametrize("backend", ["none", "dir"])
def test_notify_ready_reload_stop(gateway, tmp_path, backend):
    sock, path = _notify_socket(tmp_path)
    overrides = {}
    if backend == "dir":
        overrides["election"] = {"backend": "dir", "path": str(tmp_path / "elect")}
    gw = gateway(overrides, env={"NOTIFY_SOCKET": path})
    try:
        got = _read_until(sock, "READY")
        assert got[-1]["READY"] == "1"
        # READY=1 means what /readyz means: no lease refused for want of the self-test
        assert requests.get(gw.url + "/readyz", timeout=5).status_code == 200
        before = time.clock_gettime(time.CLOCK_MONOTONIC)
        os.kill(gw.pid, signal.SIGHUP)
        got = _read_until(sock, "READY")
        assert "RELOADING" in got[0], got
        usec = int(got[0]["MONOTONIC_USEC"])
        after = time.clock_gettime(time.CLOCK_MONOTONIC)
        assert before * 1e6 <= usec <= after * 1e6 + 1e6, (before, usec, after)
        assert got[-1]["READY"] == "1"
        assert [k for d in got for k in d if k in ("RELOADING", "READY")] == ["RELOADING", "READY"]
        os.kill(gw.pid, signal.SIGTERM)
        got = _read_until(sock, "STOPPING")
        assert got[-1]["STOPPING"] == "1"
        gw.proc.wait(timeout=20)
        gw.pid = None
        gw.proc = None
    finally:
        sock.close()


def test_notify_failed_reload_still_ready(gateway, tmp_path):
    """A reload that does not validate keeps the old configuration and ends with READY=1."""
    sock, path = _notify_socket(tmp_path)
    gw = gateway(env={"NOTIFY_SOCKET": path})
    try:
        _read_until(sock, "READY")
        good = gw.config_path.read_text()
        gw.config_path.write_text("{not json")
        os.kill(gw.pid, signal.SIGHUP)
        got = _read_until(sock, "READY")
        assert "RELOADING" in got[0]
        assert "failed" in got[-1].get("STATUS", ""), got
        gw.config_path.write_text(good)
    finally:
        sock.close()


def test_notify_watchdog(gateway, tmp_path):
    sock, path = _notify_socket(tmp_path)
    gw = gateway(env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})
    try:
        _read_until(sock, "READY")
        t0 = time.monotonic()
        _read_until(sock, "WATCHDOG", timeout=3)
        _read_until(sock, "WATCHDOG", timeout=3)
        # two ticks at half of 400 ms: about 0.4 s, never a second
        assert time.monotonic() - t0 < 1.5
    finally:
        sock.close()
    del gw


def test_notify_watchdog_for_another_pid(gateway, tmp_path):
    """WATCHDOG_PID naming another process: that watchdog is not ours."""
    sock, path = _notify_socket(tmp_path)
    gateway(env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"})
    try:
        _read_until(sock, "READY")
        with pytest.raises(AssertionError):
            _read_until(sock, "WATCHDOG", timeout=1)
    finally:
        sock.close()


def _digests(d):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.iterdir()) if p.is_file()}


def test_newer_data_dir_refused_untouched(gateway, tmp_path):
    """A data dir of a newer format: start-up refused, both versions named, files unchanged."""
    gw = gateway()
    gw.stop()
    bump = os.path.join(os.environ.get("FENCEGATE_BUILD", "build"), "tests/helpers/store_format")
    subprocess.run([bump, str(gw.data_dir), "9"], check=True)
    before = _digests(gw.data_dir)
    r = subprocess.run([gateway_bin(), "serve", "-c", str(gw.config_path)],
                       capture_output=True, text=True, timeout=30,
                       env={**os.environ, "FG_UP_AK": "x", "FG_UP_SK": "y"})
    assert r.returncode != 0
    assert "format version 9" in r.stderr and "understands (1)" in r.stderr, r.stderr
    after = _digests(gw.data_dir)
    lock_files = [n for n in before if n.endswith("-lock")]
    for n in lock_files:  # LMDB's reader table, not data
        before.pop(n)
        after.pop(n, None)
    assert before == after
