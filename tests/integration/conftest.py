"""Integration test harness: a real S3 (Ceph RGW) and the fencegate binary.

Run with Debian's interpreter (the image's pyenv python does not see Debian's
python3-boto3 and friends):

    /usr/bin/python3 -m pytest -q tests/integration

Fixtures
  rgw       (session) a Ceph RADOS Gateway on loopback, booted by
            tests/rgw/rgw.sh in a temp dir and stopped by PID at the end.  If
            FENCEGATE_RGW_ENV names the env file of an RGW that is already
            running (e.g. build/dev/rgw/env from `make run`), that one is used
            and left running.  If RGW cannot boot, the tests FAIL (never skip).
  bucket    a fresh, uniquely named bucket created directly at RGW.
  gateway   factory: gateway(overrides=None, env=None) starts
            `fencegate serve -c FILE` against rgw and returns a Gateway; every
            gateway started is stopped at teardown.

Helpers (import them with `from conftest import ...`)
  s3_client(endpoint, ak, sk)     boto3 client: path-style, us-east-1, no retries
  aws_cli(args, endpoint, ak, sk) Debian's /usr/bin/aws -> CompletedProcess
  s3cmd(args, host, ak, sk)       /usr/bin/s3cmd -> CompletedProcess
  free_port()                     a free TCP port on 127.0.0.1
  deep_merge(base, overrides)     dict merge used for gateway configs

Environment
  FENCEGATE_BIN        gateway binary (default <repo>/build/fencegate)
  FENCEGATE_RGW_ENV    reuse a running RGW (env file written by rgw.sh)
  FENCEGATE_KEEP_RGW=1 keep the RGW temp dir (logs) even when all passed
  ASAN_OPTIONS / UBSAN_OPTIONS   passed through when set; else sane defaults

Tests that need RGW get the `rgw` marker automatically (`-m "not rgw"`
deselects them).
"""

import atexit
import copy
import itertools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

try:
    import boto3
    import botocore.config
    import requests
except ImportError as e:  # pragma: no cover - environment problem
    raise ImportError(
        f"{e}: run the integration tests with /usr/bin/python3 (Debian's "
        "python3-boto3, python3-requests), not {sys.executable}"
    ) from e

# Loopback traffic must never go through a proxy from the environment
# (requests, botocore and the CLIs all honour *_proxy).
for _var in ("NO_PROXY", "no_proxy"):
    _have = os.environ.get(_var, "")
    os.environ[_var] = ",".join(x for x in (_have, "127.0.0.1,localhost,.localhost") if x)

REPO = Path(__file__).resolve().parents[2]
RGW_SH = REPO / "tests" / "rgw" / "rgw.sh"
AWS_BIN = "/usr/bin/aws"
S3CMD_BIN = "/usr/bin/s3cmd"
REGION = "us-east-1"
UPSTREAM_AK_ENV = "FG_UP_AK"
UPSTREAM_SK_ENV = "FG_UP_SK"
RGW_BOOT_TIMEOUT = 150  # seconds for rgw.sh start as a whole
GATEWAY_READY_TIMEOUT = float(os.environ.get("FENCEGATE_READY_TIMEOUT", "20"))
SAN_MARKERS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",
    "WARNING: ThreadSanitizer",
)

# ---------------------------------------------------------------- cleanup --
# Everything we start is registered here and stopped by PID at exit too, so a
# Ctrl-C (KeyboardInterrupt) or a SIGTERM to pytest leaves nothing running.

_cleanups = {}
_cleanup_ids = itertools.count()


def _register_cleanup(fn):
    key = next(_cleanup_ids)
    _cleanups[key] = fn
    return key


def _unregister_cleanup(key):
    _cleanups.pop(key, None)


@atexit.register
def _run_cleanups():
    for key in sorted(_cleanups, reverse=True):
        fn = _cleanups.pop(key, None)
        if fn is None:
            continue
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - best effort at exit
            print(f"conftest cleanup: {e}", file=sys.stderr)


def _on_sigterm(signum, frame):
    # Turn SIGTERM (CI timeout, kill PID) into an orderly exit so fixture
    # teardown and atexit run.
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "rgw: needs the real S3 (Ceph RGW) started by tests/rgw/rgw.sh"
    )
    config.addinivalue_line(
        "markers", "slow: a long run (fault injection, the differential corpus, the JS clients); "
        "`make check` runs it, CI's sanitizer pass deselects it (-m 'not slow') to stay in time")
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "rgw" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.rgw)


# ---------------------------------------------------------------- helpers --


_PORTS_GIVEN = set()


def _ephemeral_low():
    """The lowest port the kernel hands to outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A TCP port that was free on 127.0.0.1 a moment ago, below the kernel's
    range for outgoing connections: bind(0) draws from that range, where any
    connection the suite opens (to RGW, through a gateway) could take the port
    between this check and the process that listens on it ("Address already in
    use"). Never the same port twice in one run."""
    low = _ephemeral_low()
    for _ in range(200):
        port = random.randrange(10000, low) if low > 10100 else 0
        if port in _PORTS_GIVEN:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            port = s.getsockname()[1]
        _PORTS_GIVEN.add(port)
        return port
    raise RuntimeError("no free port below the ephemeral range")


def run_workers():
    """The `workers` every gateway of the run gets: FG_TEST_WORKERS, or 2."""
    return int(os.environ.get("FG_TEST_WORKERS") or 2)


def deep_merge(base, overrides):
    """A copy of dict base with overrides merged in recursively.

    Dicts merge key by key; any other value (lists too) replaces; a value of
    None deletes the key.
    """
    out = copy.deepcopy(base)
    for k, v in (overrides or {}).items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def s3_client(endpoint, ak, sk, **config):
    """A boto3 S3 client: path-style, us-east-1, SigV4, one attempt only.

    Extra keyword arguments override botocore.config.Config settings.
    """
    cfg = dict(
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=5,
        read_timeout=120,
    )
    cfg.update(config)
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ak,
        aws_secret_access_key=sk,
        region_name=REGION,
        config=botocore.config.Config(**cfg),
    )


_tool_dir = None


def _tools_dir():
    global _tool_dir
    if _tool_dir is None:
        _tool_dir = tempfile.mkdtemp(prefix="fg-tools-")
        _register_cleanup(lambda: shutil.rmtree(_tool_dir, ignore_errors=True))
    return _tool_dir


def _clean_env(extra=None):
    """os.environ without AWS_*/python overrides that could leak into tools."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "PYTHON", "PYENV_"))
    }
    env.update(extra or {})
    return env


_AWS_CONFIG = """[default]
region = us-east-1
max_attempts = 1
retry_mode = standard
cli_pager =
s3 =
    addressing_style = path
"""


def aws_cli(args, endpoint, ak, sk, *, input=None, timeout=300, env=None, check=False):
    """Runs Debian's /usr/bin/aws --endpoint-url ENDPOINT ARGS.

    Path-style addressing, us-east-1, one attempt, no pager.  Returns the
    subprocess.CompletedProcess (text mode unless input is bytes).
    """
    cfg = Path(_tools_dir()) / "aws-config"
    if not cfg.exists():
        cfg.write_text(_AWS_CONFIG)
    e = _clean_env(
        {
            "AWS_ACCESS_KEY_ID": ak,
            "AWS_SECRET_ACCESS_KEY": sk,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_CONFIG_FILE": str(cfg),
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_PAGER": "",
        }
    )
    e.update(env or {})
    return subprocess.run(
        [AWS_BIN, "--endpoint-url", endpoint, *map(str, args)],
        input=input,
        capture_output=True,
        text=not isinstance(input, bytes),
        timeout=timeout,
        env=e,
        check=check,
    )


def _hostport(host):
    for prefix in ("http://", "https://"):
        if host.startswith(prefix):
            host = host[len(prefix):]
    return host.rstrip("/")


def s3cmd(args, host, ak, sk, *, timeout=300, check=False, extra_config=""):
    """Runs /usr/bin/s3cmd with a temp config for HOST (host:port or URL).

    Path-style (host_bucket without %(bucket)s), plain http, SigV4.  Returns
    the subprocess.CompletedProcess (text).
    """
    hp = _hostport(host)
    cfg = Path(_tools_dir()) / f"s3cfg-{uuid.uuid4().hex[:8]}"
    cfg.write_text(
        "[default]\n"
        f"access_key = {ak}\n"
        f"secret_key = {sk}\n"
        f"host_base = {hp}\n"
        f"host_bucket = {hp}\n"
        "use_https = False\n"
        "signature_v2 = False\n"
        "bucket_location = us-east-1\n"
        "check_ssl_certificate = False\n"
        "progress_meter = False\n"
        + extra_config
    )
    try:
        return subprocess.run(
            [S3CMD_BIN, "-c", str(cfg), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_clean_env(),
            check=check,
        )
    finally:
        cfg.unlink(missing_ok=True)


def read_env_file(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _tail(path, n=60):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


# -------------------------------------------------------------------- RGW --


class Rgw:
    """A running RGW.  Attributes: endpoint, access_key, secret_key, port,
    dir (None when reused), env_file, owned (we started it)."""

    def __init__(self, env, env_file, dir_=None, owned=False):
        self.endpoint = env["RGW_ENDPOINT"]
        self.access_key = env["RGW_ACCESS_KEY"]
        self.secret_key = env["RGW_SECRET_KEY"]
        self.port = int(env.get("RGW_PORT") or self.endpoint.rsplit(":", 1)[1])
        self.host = f"127.0.0.1:{self.port}"
        self.dir = dir_
        self.env_file = str(env_file)
        self.owned = owned
        self.boot_ms = int(env["RGW_BOOT_MS"]) if env.get("RGW_BOOT_MS") else None

    def client(self, access_key=None, secret_key=None, **config):
        """boto3 client straight to RGW (not through the gateway)."""
        return s3_client(
            self.endpoint,
            access_key or self.access_key,
            secret_key or self.secret_key,
            **config,
        )

    def aws(self, args, **kw):
        return aws_cli(args, self.endpoint, self.access_key, self.secret_key, **kw)

    def s3cmd(self, args, **kw):
        return s3cmd(args, self.host, self.access_key, self.secret_key, **kw)

    def stop(self):
        if self.owned and self.dir:
            subprocess.run(
                ["bash", str(RGW_SH), "stop", self.dir],
                timeout=60,
                check=False,
            )

    def __repr__(self):
        return f"Rgw({self.endpoint}, dir={self.dir})"


def _rgw_reachable(rgw):
    try:
        rgw.client(connect_timeout=2, read_timeout=5).list_buckets()
        return None
    except Exception as e:  # noqa: BLE001
        return e


@pytest.fixture(scope="session")
def rgw(request):
    reuse = os.environ.get("FENCEGATE_RGW_ENV")
    if reuse:
        r = Rgw(read_env_file(reuse), reuse)
        err = _rgw_reachable(r)
        if err is not None:
            pytest.fail(f"FENCEGATE_RGW_ENV={reuse}: RGW at {r.endpoint} unusable: {err}")
        yield r
        return

    d = tempfile.mkdtemp(prefix="fg-rgw-")
    # Registered before the start, so an interrupted boot is stopped too
    # (rgw.sh writes DIR/pids as it spawns).
    key = _register_cleanup(
        lambda: subprocess.run(["bash", str(RGW_SH), "stop", d], timeout=60, check=False)
    )
    booted = False
    try:
        try:
            p = subprocess.run(
                ["bash", str(RGW_SH), "start", d],
                capture_output=True,
                text=True,
                timeout=RGW_BOOT_TIMEOUT,
            )
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"rgw.sh start {d} timed out after {RGW_BOOT_TIMEOUT}s: {e.stderr}")
        if p.returncode != 0:
            pytest.fail(
                f"RGW did not boot (rgw.sh start {d} exit {p.returncode}); logs in {d}\n"
                f"{p.stdout}\n{p.stderr}",
                pytrace=False,
            )
        r = Rgw(read_env_file(Path(d) / "env"), Path(d) / "env", d, owned=True)
        err = _rgw_reachable(r)
        if err is not None:
            pytest.fail(f"RGW booted but boto3 cannot list buckets: {err}")
        booted = True
        yield r
    finally:
        subprocess.run(["bash", str(RGW_SH), "stop", d], timeout=60, check=False)
        _unregister_cleanup(key)
        keep = not booted or request.session.testsfailed or os.environ.get("FENCEGATE_KEEP_RGW")
        if not keep:
            shutil.rmtree(d, ignore_errors=True)
        else:
            print(f"\nRGW logs kept in {d}", file=sys.stderr)


def _empty_bucket(c, name):
    try:
        for page in c.get_paginator("list_multipart_uploads").paginate(Bucket=name):
            for u in page.get("Uploads", []):
                c.abort_multipart_upload(Bucket=name, Key=u["Key"], UploadId=u["UploadId"])
    except Exception:  # noqa: BLE001
        pass
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=name):
        objs = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if objs:
            c.delete_objects(Bucket=name, Delete={"Objects": objs, "Quiet": True})


_bucket_seq = itertools.count()


def unique_bucket_name(prefix="fg"):
    return f"{prefix}-{os.getpid()}-{next(_bucket_seq)}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def bucket(rgw):
    """A fresh bucket made directly at RGW; emptied and deleted afterwards."""
    c = rgw.client()
    name = unique_bucket_name()
    c.create_bucket(Bucket=name)
    yield name
    try:
        _empty_bucket(c, name)
        c.delete_bucket(Bucket=name)
    except Exception as e:  # noqa: BLE001 - RGW is throw-away anyway
        print(f"bucket {name}: cleanup failed: {e}", file=sys.stderr)


@pytest.fixture
def locks_bucket(rgw, bucket):
    """A second bucket, for an s3 election's lock objects (next to `bucket`)."""
    name = bucket + "-locks"
    rgw.client().create_bucket(Bucket=name)
    return name


# ---------------------------------------------------------------- gateway --


def gateway_bin():
    b = os.environ.get("FENCEGATE_BIN") or str(REPO / "build" / "fencegate")
    return str((REPO / b) if not os.path.isabs(b) else Path(b))


def _san_env():
    env = {}
    if "ASAN_OPTIONS" not in os.environ:
        # The gateway must exit cleanly on SIGTERM, so leak checking is on.
        env["ASAN_OPTIONS"] = (
            "halt_on_error=1:abort_on_error=0:detect_leaks=1:"
            "detect_stack_use_after_return=1:strict_string_checks=1:"
            "check_initialization_order=1"
        )
    if "UBSAN_OPTIONS" not in os.environ:
        env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    if "TSAN_OPTIONS" not in os.environ:
        supp = Path(__file__).resolve().parent.parent / "tsan.supp"
        env["TSAN_OPTIONS"] = f"suppressions={supp}"
    return env


class Gateway:
    """One fencegate process.

    Attributes: url, host ("127.0.0.1:PORT"), port, pid (None when stopped),
    proc, returncode (of the last exit), log_path, config_path, config (dict),
    data_dir, env (extra environment), rgw.
    Methods: start(), stop(timeout), kill9(), restart(), alive(), log(),
    client(), aws(args), s3cmd(args), wait_ready().
    """

    def __init__(self, rgw, workdir, overrides=None, env=None, port=None, name="gw"):
        self.rgw = rgw
        self.name = name
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        port = port or free_port()
        self.log_path = self.workdir / "gateway.log"
        self.config_path = self.workdir / "config.json"
        base = {
            "listen": [f"127.0.0.1:{port}"],
            "data_dir": str(self.workdir / "data"),
            "upstream": {
                "endpoint": rgw.endpoint,
                "region": REGION,
                "addressing": "path",
                "access_key_env": UPSTREAM_AK_ENV,
                "secret_key_env": UPSTREAM_SK_ENV,
            },
            # RGW on loopback commits a request within milliseconds of its last
            # byte: small commit margins keep the write-window start gate and
            # short test leases cheap (README "Write windows").
            "fencing": {"commit_margin_ms": 100, "complete_margin_ms": 200},
        }
        # The event loops of every gateway of the run: two unless
        # FG_TEST_WORKERS says otherwise (make integration-one-loop: 1), so
        # the cross-loop paths run in every test and the suite runs alike on
        # any machine (the product's default is one loop per CPU).
        base["workers"] = run_workers()
        self.config = deep_merge(base, overrides)
        # url/port follow the first listener, data_dir the merged config, so
        # overrides of either (a shared data_dir, a fixed port) just work.
        first = self.config["listen"][0]
        self.host = first if isinstance(first, str) else f"127.0.0.1:{port}"
        self.port = int(self.host.rsplit(":", 1)[1])
        self.url = f"http://{self.host}"
        self.data_dir = Path(self.config["data_dir"])
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.config, indent=2) + "\n")
        self.env = dict(env or {})
        self.proc = None
        self.pid = None
        self.returncode = None
        self._cleanup_key = None
        self.starts = 0

    # -- lifecycle --

    def start(self, wait=True):
        assert self.proc is None, "already running"
        binary = gateway_bin()
        if not os.access(binary, os.X_OK):
            pytest.fail(f"gateway binary {binary} missing (run make, or set FENCEGATE_BIN)")
        env = os.environ.copy()
        env.update(_san_env())
        env[UPSTREAM_AK_ENV] = self.rgw.access_key
        env[UPSTREAM_SK_ENV] = self.rgw.secret_key
        env.update(self.env)
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"==== start #{self.starts} {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [binary, "serve", "-c", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=str(self.workdir),
                start_new_session=True,  # Ctrl-C goes to pytest; we stop it by PID
            )
        self.pid = self.proc.pid
        self.returncode = None
        self._cleanup_key = _register_cleanup(self._atexit_kill)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=GATEWAY_READY_TIMEOUT):
        """Polls GET /healthz until 200; fails the test if the process exits
        or the deadline passes."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self._reap()
                pytest.fail(
                    f"gateway exited with {rc} before answering /healthz\n{self.log()}",
                    pytrace=False,
                )
            try:
                r = requests.get(self.url + "/healthz", timeout=1)
                if r.status_code == 200:
                    self._await_self_test(deadline)
                    return
                last = f"HTTP {r.status_code}"
            except requests.RequestException as e:
                last = repr(e)
            if time.monotonic() > deadline:
                self.kill9()
                pytest.fail(
                    f"gateway not ready on {self.url} after {timeout}s ({last})\n{self.log()}",
                    pytrace=False,
                )
            time.sleep(0.05)

    def _await_self_test(self, deadline):
        """Live is not ready: a gateway with an election refuses leases (503
        "self-test running") until the backend's start-up self-test has passed,
        which on a loaded machine outlasts the first request.  Waits while
        /readyz says exactly that; any other answer (ready, a failed self-test,
        an unreachable upstream, no /readyz on this port) is the test's to see."""
        if "election" not in self.config:
            return
        while time.monotonic() < deadline:
            try:
                r = requests.get(self.url + "/readyz", timeout=1)
            except requests.RequestException:
                return
            if r.status_code != 503 or "self-test running" not in r.text:
                return
            time.sleep(0.05)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=10):
        """SIGTERM, wait up to timeout, then SIGKILL.  Returns the exit status
        (negative: killed by that signal) or None if it was not running."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self._reap()

    def kill9(self):
        """SIGKILL (a crash); returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        return self._reap()

    def restart(self, wait=True, kill=False):
        """Stops (SIGTERM, or SIGKILL if kill) and starts again with the same
        port, config and data_dir."""
        if kill:
            self.kill9()
        else:
            self.stop()
        return self.start(wait=wait)

    def _reap(self):
        self.returncode = self.proc.returncode
        self.proc = None
        self.pid = None
        if self._cleanup_key is not None:
            _unregister_cleanup(self._cleanup_key)
            self._cleanup_key = None
        return self.returncode

    def _atexit_kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    # -- inspection and clients --

    def log(self, tail=None):
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        if tail:
            text = "\n".join(text.splitlines()[-tail:])
        return text

    def sanitizer_reports(self):
        return [m for m in SAN_MARKERS if m in self.log()]

    def client(self, access_key=None, secret_key=None, **config):
        return s3_client(
            self.url,
            access_key or self.rgw.access_key,
            secret_key or self.rgw.secret_key,
            **config,
        )

    def aws(self, args, access_key=None, secret_key=None, **kw):
        return aws_cli(
            args,
            self.url,
            access_key or self.rgw.access_key,
            secret_key or self.rgw.secret_key,
            **kw,
        )

    def s3cmd(self, args, access_key=None, secret_key=None, **kw):
        return s3cmd(
            args,
            self.host,
            access_key or self.rgw.access_key,
            secret_key or self.rgw.secret_key,
            **kw,
        )

    def __repr__(self):
        return f"Gateway({self.url}, pid={self.pid})"


@pytest.fixture
def gateway(rgw, tmp_path):
    """Factory: gateway(overrides=None, env=None, port=None, wait=True).

    Writes the config (base config deep-merged with overrides), starts
    `fencegate serve -c FILE` with FG_UP_AK/FG_UP_SK set to RGW's keys and
    waits for GET /healthz == 200.  All gateways are stopped at teardown; a
    sanitizer report in a gateway's log fails the test.
    """
    started = []

    def start(overrides=None, env=None, port=None, wait=True):
        gw = Gateway(rgw, tmp_path / f"gw{len(started)}", overrides, env, port,
                     name=f"gw{len(started)}")
        started.append(gw)
        return gw.start(wait=wait)

    yield start
    problems = []
    for gw in started:
        gw.stop()
        reps = gw.sanitizer_reports()
        if reps:
            problems.append(f"{gw.name}: {', '.join(reps)}\n{gw.log(tail=80)}")
    if problems:
        pytest.fail("sanitizer reports in gateway logs:\n" + "\n".join(problems), pytrace=False)
