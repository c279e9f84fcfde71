"""GET /metrics (README "Metrics"): a scripted scenario against the real gateway
and RGW (a grant, renewals, a release, an expiry, a stale write, a write-window
cut, a takeover, an upstream failure, a refused classification, a client
abort), after which every family is present, `promtool check metrics` passes
and each counter and histogram count moved by exactly what the scenario did.
And the bound: 10,000 invented lock names leave the exposition bounded."""
import concurrent.futures
import re
import shutil
import socket
import subprocess
import time

import pytest
import requests

from relay import DelayRelay

LOCK = "orders"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"  # Debian's prometheus (make deps)

FAMILIES = [
    "fencegate_build_info", "fencegate_config_info", "fencegate_config_reloads_total",
    "fencegate_ready", "fencegate_requests_total",
    "fencegate_request_duration_seconds", "fencegate_upstream_duration_seconds",
    "fencegate_fence_hold_seconds", "fencegate_audit_commit_seconds",
    "fencegate_election_backend_seconds", "fencegate_fence_refusals_total",
    "fencegate_write_window_reads_total", "fencegate_write_window_holds_total",
    "fencegate_write_window_cuts_total", "fencegate_audit_queue_depth",
    "fencegate_audit_records_stored_total", "fencegate_audit_failures_total",
    "fencegate_lock_epoch", "fencegate_lock_lease_remaining_seconds",
    "fencegate_lease_grants_total", "fencegate_lease_renewals_total",
    "fencegate_lease_releases_total", "fencegate_lease_expiries_total",
    "fencegate_lease_takeovers_total", "fencegate_upstream_connections_open",
    "fencegate_upstream_connections_idle", "fencegate_upstream_errors_total",
    "fencegate_client_connections_open", "fencegate_classify_refusals_total",
    "fencegate_client_aborts_total", "fencegate_requests_received_total",
    "fencegate_requests_in_flight", "fencegate_requests_forwarded_total",
    "fencegate_writes_forwarded_total", "process_start_time_seconds",
    "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
    "process_max_fds",
]

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


class Scrapes:
    """GET /metrics, parsed; counts its own requests (each is a GatewayApi 200
    counted when it ends, so in the next scrape)."""

    def __init__(self, gw):
        self.gw = gw
        self.n = 0
        self.text = ""

    def get(self):
        r = requests.get(f"{self.gw.url}/metrics", timeout=10)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
        self.n += 1
        self.text = r.text
        out = {}
        for line in r.text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = SAMPLE.match(line)
            assert m, line
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
        return out


def diff(a, b, name, labels=""):
    return b.get((name, labels), 0) - a.get((name, labels), 0)


def api(gw, path, body):
    return requests.post(f"{gw.url}/_fencegate/v1/locks/{path}", json=body, timeout=30)


def acquire(gw, holder, lease_ms):
    r = api(gw, f"{LOCK}/acquire", {"holder": holder, "lease_ms": lease_ms, "wait_ms": 0})
    assert r.status_code == 200, r.text
    return r.json()


def put(gw, bucket, key, body, token, lock=LOCK):
    return requests.put(f"{gw.url}/{bucket}/{key}", data=body, timeout=30,
                        headers={"X-Fencing-Token": str(token), "X-Fencing-Lock": lock})


def raw_head(gw, head):
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
    s.sendall(head.encode())
    return s


def read_status(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ")[1]) if data else 0


def promtool_check(text, tmp_path):
    p = tmp_path / "metrics.txt"
    p.write_text(text)
    r = subprocess.run([PROMTOOL, "check", "metrics"], stdin=open(p), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def metrics_gateway(gateway, rgw, bucket, tmp_path, relay, max_locks=3):
    gw = gateway({
        "gateway_id": "gw-m",
        "upstream": {"endpoint": f"http://127.0.0.1:{relay.port}"},
        "election": {"backend": "dir", "path": str(tmp_path / "locks"), "min_lease_ms": 200},
        "fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                    "require_token": True}],
        "metrics": {"max_locks": max_locks},
    })
    deadline = time.monotonic() + 30
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)  # past the start gate (rule 6): no fenced write is held by it
    return gw


def test_scenario_counts_exactly(gateway, rgw, bucket, tmp_path):
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    try:
        gw = metrics_gateway(gateway, rgw, bucket, tmp_path, relay)
        sc = Scrapes(gw)
        m0 = sc.get()
        api_calls = 0

        w1 = acquire(gw, "w1", 5000)  # a grant
        api_calls += 1
        assert put(gw, bucket, "orders/a", b"one", w1["token"]).status_code == 200
        for _ in range(2):  # renewals
            r = api(gw, f"{LOCK}/renew", {"token": w1["token"], "lease_id": w1["lease_id"]})
            assert r.status_code == 200, r.text
            api_calls += 1
        r = api(gw, f"{LOCK}/release", {"token": w1["token"], "lease_id": w1["lease_id"]})
        assert r.status_code == 200, r.text  # a release
        api_calls += 1
        w2 = acquire(gw, "w2", 1000)  # a second grant, no takeover (w1 released)
        api_calls += 1
        assert w2["token"] == w1["token"] + 1

        r = put(gw, bucket, "orders/b", b"stale", w1["token"])  # a stale write
        assert r.status_code == 409 and "StaleFencingToken" in r.text, r.text

        # A write-window cut: admitted inside w2's lease, its last byte arrives after it
        s = raw_head(gw, f"PUT /{bucket}/orders/c HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n"
                         f"X-Fencing-Token: {w2['token']}\r\nX-Fencing-Lock: {LOCK}\r\n\r\nhalf ")
        time.sleep(1.4)  # w2's lease (1 s) runs out unrenewed: an expiry
        s.sendall(b"later")
        assert read_status(s) == 409
        s.close()

        w3 = acquire(gw, "w3", 1000)  # a takeover of the run-out epoch
        api_calls += 1
        assert w3["token"] == w2["token"] + 1
        r = api(gw, f"{LOCK}/release", {"token": w3["token"], "lease_id": w3["lease_id"]})
        assert r.status_code == 200, r.text
        api_calls += 1

        # An upstream failure: the relay drops the connection
        r = requests.get(f"{gw.url}/{bucket}/free/x", headers={"x-test-break": "1"}, timeout=30)
        assert r.status_code == 502, r.text
        # A refused classification: a browser form upload
        r = requests.post(f"{gw.url}/{bucket}/free/form", data=b"--x--", timeout=30,
                          headers={"Content-Type": "multipart/form-data; boundary=x"})
        assert r.status_code == 501, r.text
        # A client abort: half a body, then gone
        s = raw_head(gw, f"PUT /{bucket}/free/gone HTTP/1.1\r\nHost: x\r\n"
                         f"Content-Length: 100\r\n\r\n0123456789")
        time.sleep(0.2)
        s.close()
        deadline = time.monotonic() + 10
        while True:
            m1 = sc.get()
            if diff(m0, m1, "fencegate_client_aborts_total") >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        time.sleep(0.3)  # the audit commits are measured when their callbacks run
        m1 = sc.get()

        for fam in FAMILIES:
            assert f"\n# TYPE {fam} " in sc.text, fam
        promtool_check(sc.text, tmp_path)

        L = f'{{lock="{LOCK}"}}'
        assert diff(m0, m1, "fencegate_lease_grants_total", L) == 3
        assert diff(m0, m1, "fencegate_lease_renewals_total", L) == 2
        assert diff(m0, m1, "fencegate_lease_releases_total", L) == 2
        assert diff(m0, m1, "fencegate_lease_expiries_total", L) == 1
        assert diff(m0, m1, "fencegate_lease_takeovers_total", L) == 1
        assert m1[("fencegate_lock_epoch", L)] == w3["token"]
        assert m1[("fencegate_lock_lease_remaining_seconds", L)] == 0
        R = "fencegate_fence_refusals_total"
        assert diff(m0, m1, R, f'{{lock="{LOCK}",code="StaleFencingToken"}}') == 1
        assert diff(m0, m1, R, f'{{lock="{LOCK}",code="FencingLeaseExpired"}}') == 1
        assert sum(v for (n, _), v in m1.items() if n == R) == 2
        assert diff(m0, m1, "fencegate_write_window_holds_total") == 1
        assert diff(m0, m1, "fencegate_write_window_cuts_total") == 1
        assert diff(m0, m1, "fencegate_fence_hold_seconds_count") == 1
        assert diff(m0, m1, "fencegate_classify_refusals_total") == 1
        assert diff(m0, m1, "fencegate_upstream_errors_total", '{kind="connect"}') == 1
        assert diff(m0, m1, "fencegate_upstream_errors_total", '{kind="timeout"}') == 0
        assert diff(m0, m1, "fencegate_client_aborts_total") == 1
        assert diff(m0, m1, "fencegate_audit_failures_total") == 0
        # three refusals audited: the stale write, the cut, the form upload
        assert diff(m0, m1, "fencegate_audit_commit_seconds_count") == 3
        assert diff(m0, m1, "fencegate_audit_records_stored_total") == 3

        T = "fencegate_requests_total"
        assert diff(m0, m1, T, '{operation="PutObject",code="200"}') == 1
        assert diff(m0, m1, T, '{operation="PutObject",code="409"}') == 2
        assert diff(m0, m1, T, '{operation="PutObject",code="499"}') == 1
        assert diff(m0, m1, T, '{operation="GetObject",code="502"}') == 1
        assert diff(m0, m1, T, '{operation="Unknown",code="501"}') == 1
        # the API calls, and every scrape but the last
        assert diff(m0, m1, T, '{operation="GatewayApi",code="200"}') == api_calls + sc.n - 1
        moved = {k: diff(m0, m1, *k) for k in m1 if k[0] == T and diff(m0, m1, *k) != 0}
        assert len(moved) == 6, moved
        # each request once in its operation's latency histogram
        for (_, labels), n in moved.items():
            op = labels.split(",")[0] + "}"
            assert diff(m0, m1, "fencegate_request_duration_seconds_count", op) == sum(
                v for (_, lb), v in moved.items() if lb.startswith(op[:-1] + ","))
        # upstream heads: the PutObject that passed, and the GetObject? no: it broke
        assert diff(m0, m1, "fencegate_upstream_duration_seconds_count",
                    '{operation="PutObject"}') == 1
        assert diff(m0, m1, "fencegate_upstream_duration_seconds_count",
                    '{operation="GetObject"}') == 0
        assert m1[("fencegate_upstream_duration_seconds_bucket",
                   '{operation="PutObject",le="+Inf"}')] == m1[
            ("fencegate_upstream_duration_seconds_count", '{operation="PutObject"}')]
        # the election's backend calls were timed (the dir backend: creates, gets, lists)
        beops = {lb: v for (n, lb), v in m1.items()
                 if n == "fencegate_election_backend_seconds_count"}
        assert set(beops) == {f'{{op="{o}"}}' for o in
                              ("create", "replace", "get", "list", "delete")}
        assert diff(m0, m1, "fencegate_election_backend_seconds_count", '{op="create"}') >= 3
        assert diff(m0, m1, "fencegate_election_backend_seconds_count", '{op="replace"}') >= 5
        assert m1[("fencegate_ready", "")] == 1
        assert m1[("fencegate_requests_in_flight", "")] == 0
        assert m1[("process_open_fds", "")] > 0 and m1[("process_max_fds", "")] > 0
        assert m1[("process_resident_memory_bytes", "")] > 1 << 20
        assert abs(m1[("process_start_time_seconds", "")] - time.time()) < 3600
        assert re.search(r'fencegate_build_info\{version="[^"]+",commit="[0-9a-f]{7,}|unknown"\} 1',
                         sc.text)
    finally:
        relay.close()


@pytest.mark.slow  # 10,000 audited refusals: about 15 s, longer under ASan
def test_ten_thousand_invented_locks_stay_bounded(gateway, rgw, bucket, tmp_path):
    """Every write naming an invented lock is refused (FencingTokenNotGranted) and
    counted; past metrics.max_locks they share lock="_other"."""
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    try:
        gw = metrics_gateway(gateway, rgw, bucket, tmp_path, relay, max_locks=50)
        sess = [requests.Session() for _ in range(16)]

        def one(i):
            r = sess[i % 16].put(f"{gw.url}/{bucket}/free/k{i}", data=b"x", timeout=60,
                                 headers={"X-Fencing-Token": "1", "X-Fencing-Lock": f"inv-{i}"})
            return r.status_code

        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            codes = list(ex.map(one, range(10000)))
        assert set(codes) == {409}, {c: codes.count(c) for c in set(codes)}
        sc = Scrapes(gw)
        m = sc.get()
        R = "fencegate_fence_refusals_total"
        series = {lb for (n, lb) in m if n == R}
        locks = {re.match(r'\{lock="([^"]*)"', lb).group(1) for lb in series}
        assert len(locks) == 51, sorted(locks)[:5]  # 50 of their own, and _other
        assert "_other" in locks
        assert sum(v for (n, _), v in m.items() if n == R) == 10000
        assert m[(R, '{lock="_other",code="FencingTokenNotGranted"}')] == 10000 - 50
        assert len(sc.text) < 200_000, len(sc.text)
        promtool_check(sc.text, tmp_path)
    finally:
        relay.close()
