"""The JSON access log, log_format json and W3C trace ids, through the real
gateway to RGW (README "Access log and tracing").  A relay between the
gateway and RGW records what goes upstream, so the traceparent header can be
seen forwarded unchanged, and is closed to make the upstream fail."""

import http.client
import json
import os
import signal
import socket
import subprocess
import time

import requests

from conftest import gateway_bin
from relay import DelayRelay, split_request
from test_fencing import LOCK, audit, grant, wait_audit

KEYS = ["time", "request_id", "client", "principal", "method", "operation", "bucket", "key",
        "lock", "token", "status", "error_code", "bytes_in", "bytes_out", "duration_ms",
        "upstream_status", "upstream_ms", "trace_id"]

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TP = f"00-{TRACE}-00f067aa0ba902b7-01"


def tp(n):
    """A valid traceparent whose trace id ends in n (hex)."""
    t = f"{TRACE[:-4]}{n:04x}"
    return t, f"00-{t}-00f067aa0ba902b7-01"


def lines(path):
    """Every line of the access log, each parsed (a line that does not parse fails)."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path, "rb") as f:
        for raw in f.read().split(b"\n"):
            if raw:
                o = json.loads(raw.decode("utf-8"))  # strict UTF-8, strict JSON
                assert list(o) == KEYS, raw  # exactly these keys, in this order
                out.append(o)
    return out


def line_where(path, timeout=5, **match):
    """The one line matching every field in match, waiting for the writer's batch."""
    deadline = time.monotonic() + timeout
    while True:
        got = [o for o in lines(path) if all(o.get(k) == v for k, v in match.items())]
        if got or time.monotonic() > deadline:
            assert len(got) == 1, (match, got)
            return got[0]
        time.sleep(0.05)


def rid(resp):
    """The gateway's id of the request (a forwarded answer keeps the store's x-amz-request-id)."""
    return resp.headers.get("x-fencegate-request-id") or resp.headers["x-amz-request-id"]


def code_of(text):
    return text.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in text else None


def metric(gw, name):
    for ln in requests.get(f"{gw.url}/metrics", timeout=10).text.splitlines():
        if ln.startswith(name + " "):
            return int(ln.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def start(gateway, rgw, bucket, tmp_path, **extra):
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    log = tmp_path / "access.log"
    cfg = {"upstream": {"endpoint": f"http://127.0.0.1:{relay.port}"},
           "access_log": str(log),
           "fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                       "require_token": True}]}
    cfg.update(extra)
    return gateway(cfg), relay, str(log)


def forwarded_headers(relay, path, method="PUT"):
    """The headers of the first `method path` request that went upstream (a
    fenced PUT may follow the gateway's own HEAD of its key: conditional writes)."""
    for raw in relay.requests:
        line, hdrs, _ = split_request(raw)
        if line.startswith(f"{method} {path}"):
            return hdrs
    raise AssertionError(f"{method} {path} never went upstream")


def test_access_log_scenario(gateway, rgw, bucket, tmp_path):
    gw, relay, log = start(gateway, rgw, bucket, tmp_path)
    try:
        grant(gw, 5)
        time.sleep(0.3)  # the start gate (commit margin) after start
        # a fenced write
        t1, tp1 = tp(1)
        w = requests.put(f"{gw.url}/{bucket}/orders/a", data=b"hello",
                         headers={"X-Fencing-Token": "5", "traceparent": tp1}, timeout=10)
        assert w.status_code == 200, w.text
        o = line_where(log, request_id=rid(w))
        assert o["method"] == "PUT" and o["operation"] == "PutObject"
        assert (o["bucket"], o["key"], o["lock"], o["token"]) == (bucket, "orders/a", LOCK, 5)
        assert (o["status"], o["error_code"], o["bytes_in"]) == (200, None, 5)
        assert o["upstream_status"] == 200 and o["upstream_ms"] >= 0
        assert o["duration_ms"] >= o["upstream_ms"]
        assert o["trace_id"] == t1 and o["principal"] is None
        assert o["client"].startswith("127.0.0.1:")
        assert o["time"].endswith("Z") and o["time"][10] == "T"
        # the header went upstream exactly as it came
        assert forwarded_headers(relay, f"/{bucket}/orders/a")["traceparent"] == tp1

        # a read
        r = requests.get(f"{gw.url}/{bucket}/orders/a", timeout=10)
        assert r.status_code == 200 and r.content == b"hello"
        o = line_where(log, request_id=rid(r))
        assert (o["method"], o["operation"], o["status"], o["bytes_out"]) == \
            ("GET", "GetObject", 200, 5)
        assert (o["lock"], o["token"], o["trace_id"], o["upstream_status"]) == \
            (None, None, None, 200)

        # a stale write, refused before forwarding
        grant(gw, 6)  # the successor writes with 6 ...
        b = requests.put(f"{gw.url}/{bucket}/orders/a", data=b"B", timeout=10,
                         headers={"X-Fencing-Token": "6"})
        assert b.status_code == 200, b.text
        t2, tp2 = tp(2)  # ... and the zombie wakes with 5
        s = requests.put(f"{gw.url}/{bucket}/orders/a", data=b"zombie",
                         headers={"X-Fencing-Token": "5", "traceparent": tp2}, timeout=10)
        assert s.status_code == 409 and code_of(s.text) == "StaleFencingToken"
        o = line_where(log, request_id=rid(s))
        assert (o["status"], o["error_code"], o["lock"], o["token"]) == \
            (409, "StaleFencingToken", LOCK, 5)
        assert (o["upstream_status"], o["upstream_ms"], o["trace_id"]) == (None, None, t2)
        # ... its trace id in the audit API, `fencegate audit --json` and the log line
        recs = [x for x in wait_audit(gw, 1, lock=LOCK) if x["request_id"] == rid(s)]
        assert len(recs) == 1 and recs[0]["trace_id"] == t2
        cli = subprocess.run([gateway_bin(), "audit", "--data-dir", str(gw.data_dir), "--json"],
                             capture_output=True, text=True, timeout=30)
        assert cli.returncode == 0, cli.stderr
        assert f'"trace_id":"{t2}"' in cli.stdout
        assert any(rid(s) in ln and f"trace {t2}" in ln and "refused" in ln
                   for ln in gw.log().splitlines())
        # the zombie retries: counted into that record, and its id is "<first's>.2"
        # in the answer, the access log, the refusal's log line and the audit API
        s2 = requests.put(f"{gw.url}/{bucket}/orders/a", data=b"zombie",
                          headers={"X-Fencing-Token": "5"}, timeout=10)
        assert s2.status_code == 409 and rid(s2) == rid(s) + ".2", (rid(s), rid(s2))
        assert f"<RequestId>{rid(s2)}</RequestId>" in s2.text
        o = line_where(log, request_id=rid(s2))
        assert (o["status"], o["error_code"], o["token"]) == (409, "StaleFencingToken", 5)
        assert any(f"req {rid(s2)}: PUT PutObject refused" in ln
                   for ln in gw.log().splitlines())
        found = requests.get(f"{gw.url}/_fencegate/v1/audit", params={"request_id": rid(s2)},
                             timeout=10).json()["records"]
        assert [(x["request_id"], x["count"]) for x in found] == [(rid(s), 2)], found

        # a classification refusal (G9), audited, never forwarded
        c = requests.put(f"{gw.url}/{bucket}/free/x?nosuchsubresource", data=b"x", timeout=10)
        assert c.status_code == 400, c.text
        o = line_where(log, request_id=rid(c))
        assert (o["status"], o["error_code"], o["upstream_status"]) == (400, code_of(c.text), None)
        assert o["bucket"] == bucket and o["key"] == "free/x"

        # a client abort mid-body: 499, nginx's convention
        k = socket.create_connection(("127.0.0.1", gw.port))
        k.sendall(f"PUT /{bucket}/free/aborted HTTP/1.1\r\nHost: {gw.host}\r\n"
                  f"Content-Length: {1024 * 1024}\r\n\r\n".encode() + b"z" * 4096)
        time.sleep(0.3)
        k.close()
        o = line_where(log, key="free/aborted")
        assert o["status"] == 499 and 0 < o["bytes_in"] < 1024 * 1024
        assert o["method"] == "PUT" and o["operation"] == "PutObject"

        # an upstream failure: the relay is gone
        relay.close()
        u = requests.get(f"{gw.url}/{bucket}/orders/a", timeout=30)
        assert u.status_code in (502, 504), u.text
        o = line_where(log, request_id=rid(u))
        assert (o["status"], o["upstream_status"]) == (u.status_code, None)
        assert o["error_code"] == code_of(u.text)
    finally:
        relay.close()
    assert lines(log)  # and every line parsed, with exactly the keys


def test_hostile_key_round_trips(gateway, rgw, bucket, tmp_path):
    gw, relay, log = start(gateway, rgw, bucket, tmp_path)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
        # quotes, backslash, control bytes, a newline, and a byte that is not UTF-8
        conn.request("PUT", f"/{bucket}/free/q%22b%5Cs%01c%0Anl%7F%C3%A9%FFend", body=b"x")
        resp = conn.getresponse()
        resp.read()
        o = line_where(log, request_id=resp.getheader("x-fencegate-request-id") or
                       resp.getheader("x-amz-request-id"))
        assert o["key"] == 'free/q"b\\s\x01c\nnl\x7f\u00e9\ufffdend'
        with open(log, "rb") as f:
            raw = f.read()
        assert b"\xff" not in raw and b"\x01" not in raw  # escaped, not written raw
    finally:
        relay.close()


def test_sighup_reopens_after_rename(gateway, rgw, bucket, tmp_path):
    gw, relay, log = start(gateway, rgw, bucket, tmp_path)
    try:
        a = requests.get(f"{gw.url}/{bucket}/free/before", timeout=10)
        line_where(log, request_id=rid(a))
        os.rename(log, log + ".1")  # logrotate
        os.kill(gw.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "configuration reloaded" not in gw.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        b = requests.get(f"{gw.url}/{bucket}/free/after", timeout=10)
        line_where(log, request_id=rid(b))
        old = [o["request_id"] for o in lines(log + ".1")]
        new = [o["request_id"] for o in lines(log)]
        assert rid(a) in old and rid(a) not in new  # /healthz of the start is there too
        assert rid(b) in new and rid(b) not in old
    finally:
        relay.close()


def test_malformed_traceparent_ignored_counted_forwarded(gateway, rgw, bucket, tmp_path):
    gw, relay, log = start(gateway, rgw, bucket, tmp_path)
    try:
        before = metric(gw, "fencegate_traceparent_invalid_total")
        bad = [TP.upper(), f"ff-{TRACE}-00f067aa0ba902b7-01",
               "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "garbage"]
        for i, v in enumerate(bad):
            r = requests.get(f"{gw.url}/{bucket}/free/t{i}", headers={"traceparent": v},
                             timeout=10)
            assert r.status_code == 404
            assert line_where(log, request_id=rid(r))["trace_id"] is None
            assert forwarded_headers(relay, f"/{bucket}/free/t{i}", "GET")["traceparent"] == v
        assert metric(gw, "fencegate_traceparent_invalid_total") == before + len(bad)
        r = requests.get(f"{gw.url}/{bucket}/free/ok", headers={"traceparent": TP}, timeout=10)
        assert line_where(log, request_id=rid(r))["trace_id"] == TRACE
        assert metric(gw, "fencegate_traceparent_invalid_total") == before + len(bad)
    finally:
        relay.close()


def test_log_format_json(gateway, rgw, bucket, tmp_path):
    gw, relay, log = start(gateway, rgw, bucket, tmp_path, log_format="json")
    try:
        grant(gw, 3)
        time.sleep(0.3)
        assert requests.put(f"{gw.url}/{bucket}/orders/j", data=b"x", timeout=10,
                            headers={"X-Fencing-Token": "3"}).status_code == 200
        t, tpv = tp(9)
        s = requests.put(f"{gw.url}/{bucket}/orders/j", data=b"x",
                         headers={"X-Fencing-Token": "2", "traceparent": tpv}, timeout=10)
        assert s.status_code == 409
        wait_audit(gw, 1, lock=LOCK)
    finally:
        relay.close()
    gw.stop()
    objs = []
    for ln in gw.log().splitlines():
        if not ln or ln.startswith("==== start"):
            continue  # the test harness's own marker
        o = json.loads(ln)
        assert {"time", "level", "module", "msg"} <= set(o), ln
        objs.append(o)
    refusal = [o for o in objs if o.get("request_id") == rid(s) and "refused" in o["msg"]]
    assert len(refusal) == 1, objs
    assert refusal[0]["module"] == "refuse" and f"trace {t}" in refusal[0]["msg"]
    assert not refusal[0]["msg"].startswith("req ")  # the id moved to its own key
    assert any(o["msg"].startswith("listening on") for o in objs)


def test_principal_and_server_refusals_logged(gateway, rgw, bucket, tmp_path):
    """A signed request names its principal; a head the server refuses before any
    request exists (malformed, too large) still gets its line."""
    ak, sk = "AKIAFENCEGATEWORKER", "worker-secret-0123456789abcdefghij"
    gw, relay, log = start(gateway, rgw, bucket, tmp_path,
                           principals=[{"name": "worker", "access_key": ak, "secret_key": sk}])
    try:
        c = gw.client(access_key=ak, secret_key=sk)
        r = c.put_object(Bucket=bucket, Key="free/signed", Body=b"abc")
        gid = r["ResponseMetadata"]["HTTPHeaders"]["x-fencegate-request-id"]
        o = line_where(log, request_id=gid)
        assert (o["principal"], o["operation"], o["status"], o["bytes_in"]) == \
            ("worker", "PutObject", 200, 3)
        s = socket.create_connection(("127.0.0.1", gw.port))
        s.sendall(b"GARBAGE\r\n\r\n")
        s.settimeout(10)
        answer = s.recv(4096).decode("latin-1")
        s.close()
        assert answer.startswith("HTTP/1.1 400"), answer
        sid = answer.split("x-amz-request-id: ", 1)[1].split("\r\n", 1)[0]
        o = line_where(log, request_id=sid)
        assert (o["status"], o["method"], o["error_code"]) == (400, None, code_of(answer))
    finally:
        relay.close()
