"""`fencegate lock ...`, the worker-side CLI, against a real gateway with the
`dir` election backend: acquire/show/renew/release, refusals and their exit
statuses, SigV4-signed requests, `watch`, and `lock run` (the child's
environment, its exit status, signal forwarding, and killing the child when
the lease is lost because the gateway stops answering).

Every wait is bounded; every process started here is stopped by PID.
"""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import gateway_bin

AK = "AKIALOCKCLI0001"
SK = "lock-cli-secret-key-0123456789"
PY = "/usr/bin/python3"


def election(tmp_path, **extra):
    return {"election": {"backend": "dir", "path": str(tmp_path / "locks"), "min_lease_ms": 200,
                         **extra}}


def cli_env(gw, extra=None):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "FENCEGATE_URL", "FENCING_"))
    }
    env["FENCEGATE_URL"] = gw.url
    env.update(extra or {})
    return env


def lock(gw, *args, env=None, timeout=60):
    """Runs `fencegate lock ARGS` against gw; returns the CompletedProcess."""
    return subprocess.run(
        [gateway_bin(), "lock", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(gw, env),
        stdin=subprocess.DEVNULL,
    )


def start_run(gw, args, env=None):
    """Starts `fencegate lock run ARGS` in the background (stopped by PID at the end)."""
    return subprocess.Popen(
        [gateway_bin(), "lock", "run", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(gw, env),
        stdin=subprocess.DEVNULL,
    )


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def reap(p, timeout=30):
    """Waits for p; kills it (by PID) if it does not end in time."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate(timeout=10)
        pytest.fail(f"`lock run` did not exit within {timeout}s\nstdout: {out}\nstderr: {err}")
    return p.returncode, out, err


@pytest.fixture
def procs():
    """Processes a test starts; any still running at the end is killed by PID."""
    started = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait(10)


def show(gw, name):
    r = lock(gw, "show", name)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# A child for `lock run`: records its environment, then sleeps; on SIGTERM it
# records the (monotonic) time and exits 9, unless told to ignore SIGTERM.
CHILD = r"""
import json, os, signal, sys, time
out = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "sleep"
def on_term(signum, frame):
    with open(out + ".term", "w") as f:
        json.dump({"t": time.monotonic()}, f)
    if mode != "ignore":
        sys.exit(9)
signal.signal(signal.SIGTERM, on_term)
env = {k: v for k, v in os.environ.items() if k.startswith("FENCING_")}
env["pgid"] = os.getpgid(0)
env["pid"] = os.getpid()
with open(out + ".tmp", "w") as f:
    json.dump(env, f)
os.rename(out + ".tmp", out)
if mode == "exit":
    sys.exit(int(sys.argv[3]))
while True:
    time.sleep(0.05)
"""


def child_cmd(tmp_path, *args):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return [PY, str(script), *map(str, args)]


def read_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------- basics --


def test_acquire_show_renew_release_round_trip(gateway, tmp_path):
    gw = gateway(election(tmp_path))
    r = lock(gw, "acquire", "orders", "--holder", "w1", "--lease-ms", 15000)
    assert r.returncode == 0, r.stderr
    grant = json.loads(r.stdout)
    assert grant["lock"] == "orders" and grant["holder"] == "w1"
    token, lease_id = grant["token"], grant["lease_id"]
    assert token >= 1 and len(lease_id) >= 32

    s = show(gw, "orders")
    assert s["token"] == token and s["holder"] == "w1" and s["live"] is True
    assert "lease_id" not in s  # only acquire prints it

    r = lock(gw, "show")
    assert r.returncode == 0, r.stderr
    assert [x["token"] for x in json.loads(r.stdout)["locks"] if x["lock"] == "orders"] == [token]
    assert lease_id not in r.stdout

    r = lock(gw, "renew", "orders", "--token", token, "--lease-id", lease_id)
    assert r.returncode == 0, r.stderr
    renewed = json.loads(r.stdout)
    assert renewed["token"] == token and renewed["live"] is True
    assert lease_id not in r.stdout

    # a wrong lease_id: refused (403 denied), exit 3, nothing on stdout
    r = lock(gw, "renew", "orders", "--token", token, "--lease-id", "0" * 64)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert r.stdout == "" and "denied" in r.stderr

    r = lock(gw, "release", "orders", "--token", token, "--lease-id", lease_id)
    assert r.returncode == 0, r.stderr
    s = show(gw, "orders")
    assert s["live"] is False and s["released"] is True

    # renewing a released epoch: not ours any more
    r = lock(gw, "renew", "orders", "--token", token, "--lease-id", lease_id)
    assert r.returncode == 3, (r.stdout, r.stderr)

    r = lock(gw, "acquire", "orders", "--holder", "w2")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["token"] == token + 1  # at once after a release


def test_held_lock_exits_3_and_waiting_acquire_gets_it(gateway, tmp_path):
    gw = gateway(election(tmp_path))
    r = lock(gw, "acquire", "jobs", "--holder", "w1", "--lease-ms", 1500)
    assert r.returncode == 0, r.stderr
    first = json.loads(r.stdout)

    r = lock(gw, "acquire", "jobs", "--holder", "w2")
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert r.stdout == ""  # never another holder's token on stdout
    assert '"w1"' in r.stderr and f"token {first['token']}" in r.stderr

    # w1 never renews: a waiting contender gets the next epoch once the lease ran out
    t0 = time.monotonic()
    r = lock(gw, "acquire", "jobs", "--holder", "w2", "--wait-ms", 10000, timeout=30)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["token"] == first["token"] + 1 and got["holder"] == "w2"
    assert took < 1.5 + 2.0, took


def test_usage_and_unreachable_gateway(gateway, tmp_path):
    gw = gateway(election(tmp_path))
    assert lock(gw, "acquire").returncode == 2
    assert lock(gw, "acquire", "bad/name").returncode == 2
    assert lock(gw, "renew", "x", "--token", 1).returncode == 2
    assert lock(gw, "run", "x").returncode == 2
    r = lock(gw, "--help")
    assert r.returncode == 0 and "lock run" in r.stdout
    r = lock(gw, "show", "x", env={"FENCEGATE_URL": "http://127.0.0.1:1"})
    assert r.returncode == 1 and r.stdout == ""


def test_signed_requests_with_principals(gateway, tmp_path):
    cfg = election(tmp_path)
    cfg["principals"] = [{"name": "worker", "access_key": AK, "secret_key": SK}]
    gw = gateway(cfg)
    creds = {"AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK, "AWS_REGION": "us-east-1"}
    r = lock(gw, "acquire", "signed", "--holder", "w1", env=creds)
    assert r.returncode == 0, r.stderr
    grant = json.loads(r.stdout)
    r = lock(gw, "renew", "signed", "--token", grant["token"], "--lease-id", grant["lease_id"],
             env=creds)
    assert r.returncode == 0, r.stderr
    # --access-key / --secret-key-env instead of the AWS_* names
    r = lock(gw, "show", "signed", "--access-key", AK, "--secret-key-env", "MY_SK",
             env={"MY_SK": SK})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["token"] == grant["token"]

    # unsigned, or signed with a wrong secret: refused by the gateway
    r = lock(gw, "show", "signed")
    assert r.returncode == 1 and r.stdout == ""
    r = lock(gw, "show", "signed", env={**creds, "AWS_SECRET_ACCESS_KEY": "wrong-secret"})
    assert r.returncode == 1 and r.stdout == ""
    # half a key pair is a usage error, not an unsigned request
    r = lock(gw, "show", "signed", env={"AWS_ACCESS_KEY_ID": AK})
    assert r.returncode == 2
    for out in (r.stdout, r.stderr):
        assert SK not in out
    assert SK not in gw.log()


def test_watch_prints_changes_and_stops_on_sigint(gateway, tmp_path, procs):
    gw = gateway(election(tmp_path))
    w = subprocess.Popen(
        [gateway_bin(), "lock", "watch", "feed"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(gw),
    )
    procs.append(w)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in w.stdout], daemon=True).start()

    def read_line():
        try:
            return json.loads(lines.get(timeout=10))
        except queue.Empty:
            pytest.fail("watch printed nothing within 10 s")

    first = read_line()  # the current state, at once
    assert first["token"] == 0
    r = lock(gw, "acquire", "feed", "--holder", "w1")
    assert r.returncode == 0, r.stderr
    grant = json.loads(r.stdout)
    got = read_line()
    assert got["token"] == grant["token"] and got["live"] is True
    assert "lease_id" not in got
    r = lock(gw, "release", "feed", "--token", grant["token"], "--lease-id", grant["lease_id"])
    assert r.returncode == 0, r.stderr
    got = read_line()
    assert got["token"] == grant["token"] and got["released"] is True
    t0 = time.monotonic()
    w.send_signal(signal.SIGINT)
    rc = w.wait(timeout=10)
    assert rc == 0, w.stderr.read()
    assert time.monotonic() - t0 < 5


# ------------------------------------------------------------------- run --


def test_run_exports_token_and_exits_with_child_status(gateway, tmp_path, procs):
    gw = gateway(election(tmp_path))
    out = tmp_path / "env.json"
    p = start_run(gw, ["jobs", "--lease-ms", 3000, "--", *child_cmd(tmp_path, out, "exit", 7)])
    procs.append(p)
    rc, _, err = reap(p)
    assert rc == 7, err
    env = read_json(out)
    assert env["FENCING_LOCK"] == "jobs"
    assert env["FENCING_GATEWAY"] == gw.url
    s = show(gw, "jobs")
    assert int(env["FENCING_TOKEN"]) == s["token"] >= 1
    assert s["released"] is True  # released when the child exited
    assert env["pgid"] == env["pid"]  # its own process group

    # a second run gets the next epoch
    p = start_run(gw, ["jobs", "--", *child_cmd(tmp_path, out, "exit", 0)])
    procs.append(p)
    rc, _, err = reap(p)
    assert rc == 0, err
    assert int(read_json(out)["FENCING_TOKEN"]) == s["token"] + 1


def test_run_renews_a_long_job_and_forwards_sigterm(gateway, tmp_path, procs):
    gw = gateway(election(tmp_path))
    out = tmp_path / "env.json"
    p = start_run(gw, ["long", "--lease-ms", 1200, "--", *child_cmd(tmp_path, out)])
    procs.append(p)
    wait_for(lambda: read_json(out), 20, "the child to start")
    time.sleep(3.0)  # 2.5 leases: only renewals keep it
    s = show(gw, "long")
    assert s["live"] is True and s["token"] == int(read_json(out)["FENCING_TOKEN"])
    assert s["renewals"] >= 3
    p.send_signal(signal.SIGTERM)  # forwarded; the child exits 9
    rc, _, err = reap(p)
    assert rc == 9, err
    assert read_json(str(out) + ".term") is not None
    assert show(gw, "long")["released"] is True


@pytest.mark.parametrize("how", ["sigstop", "stop"])
def test_run_kills_child_when_lease_is_lost(gateway, tmp_path, procs, how):
    gw = gateway(election(tmp_path))
    lease_s = 2.0
    out = tmp_path / "env.json"
    p = start_run(
        gw,
        ["lost", "--lease-ms", int(lease_s * 1000), "--grace-ms", 3000, "--",
         *child_cmd(tmp_path, out)],
    )
    procs.append(p)
    wait_for(lambda: read_json(out), 20, "the child to start")
    time.sleep(0.5)
    gwpid = gw.pid
    t0 = time.monotonic()
    try:
        if how == "sigstop":
            os.kill(gwpid, signal.SIGSTOP)  # answers nothing, connections hang
        else:
            gw.stop()  # connections refused
        term = wait_for(lambda: read_json(str(out) + ".term"), lease_s + 5, "SIGTERM")
        rc, _, err = reap(p, timeout=15)
    finally:
        if how == "sigstop":
            os.kill(gwpid, signal.SIGCONT)
    took = term["t"] - t0
    # the last renew was sent before t0, so the lease ran out by t0 + lease
    assert took <= lease_s + 0.75, (took, err)
    assert rc == 4, err
    assert "lost" in err


def test_run_sigkills_a_child_that_ignores_sigterm(gateway, tmp_path, procs):
    gw = gateway(election(tmp_path))
    out = tmp_path / "env.json"
    p = start_run(
        gw, ["stubborn", "--lease-ms", 1500, "--grace-ms", 1000, "--",
             *child_cmd(tmp_path, out, "ignore")],
    )
    procs.append(p)
    env = wait_for(lambda: read_json(out), 20, "the child to start")
    time.sleep(0.3)
    t0 = time.monotonic()
    os.kill(gw.pid, signal.SIGSTOP)
    try:
        rc, _, err = reap(p, timeout=15)
    finally:
        os.kill(gw.pid, signal.SIGCONT)
    took = time.monotonic() - t0
    assert rc == 4, err
    assert read_json(str(out) + ".term") is not None  # it was asked first
    assert took <= 1.5 + 1.0 + 1.5, took
    with pytest.raises(ProcessLookupError):
        os.kill(env["pid"], 0)  # and then killed


def test_run_waits_for_a_held_lock(gateway, tmp_path, procs):
    gw = gateway(election(tmp_path))
    r = lock(gw, "acquire", "queue", "--holder", "other", "--lease-ms", 60000)
    assert r.returncode == 0, r.stderr
    grant = json.loads(r.stdout)
    out = tmp_path / "env.json"
    # --wait-ms bounds the wait: held all along gives 3, and CMD never runs
    r = subprocess.run(
        [gateway_bin(), "lock", "run", "queue", "--wait-ms", "1500", "--",
         *child_cmd(tmp_path, out, "exit", 0)],
        capture_output=True, text=True, timeout=30, env=cli_env(gw),
    )
    assert r.returncode == 3, r.stderr
    assert not out.exists()
    # without --wait-ms it waits until the holder releases
    p = start_run(gw, ["queue", "--", *child_cmd(tmp_path, out, "exit", 0)])
    procs.append(p)
    time.sleep(1.0)
    assert p.poll() is None and not out.exists()
    r = lock(gw, "release", "queue", "--token", grant["token"], "--lease-id", grant["lease_id"])
    assert r.returncode == 0, r.stderr
    rc, _, err = reap(p, timeout=20)
    assert rc == 0, err
    assert int(read_json(out)["FENCING_TOKEN"]) == grant["token"] + 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
