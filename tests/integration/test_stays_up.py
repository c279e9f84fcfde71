"""G10 "It stays up" and G7's 503 SlowDown, through the real binary: bodies
past S3's size limit are refused before forwarding, refused uploads are read
so their clients see the S3 error instead of EPIPE, a refusal that cannot be
audited is answered 503 SlowDown, and /readyz reports an upstream it cannot
reach."""

import socket
import threading
import time

import requests
from rawhttp import code, read_response, status

LOCK = "orders"


def fenced(bucket, **more):
    cfg = {"fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                       "require_token": True}]}
    cfg.update(more)
    return cfg


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- limits.max_object_bytes ----


def test_body_past_max_object_bytes_is_refused_before_forwarding(gateway, rgw, bucket):
    """A 100 TiB Content-Length gets S3's 400 EntityTooLarge at once, not a
    forwarded transfer that waits for the body timeout.  The upstream refuses
    connections: anything forwarded would come back 502."""
    gw = gateway({"upstream": {"endpoint": f"http://127.0.0.1:{_closed_port()}"}})
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
    try:
        t0 = time.monotonic()
        s.sendall(f"PUT /{bucket}/big HTTP/1.1\r\nHost: {gw.host}\r\n"
                  f"Content-Length: {100 << 40}\r\n\r\n".encode() + b"x" * 1000)
        head, body = read_response(s)
        assert status(head) == 400 and code(body) == "EntityTooLarge", (head, body)
        assert time.monotonic() - t0 < 5
    finally:
        s.close()
    # aws-chunked: the decoded length counts
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
    try:
        s.sendall(f"PUT /{bucket}/big2 HTTP/1.1\r\nHost: {gw.host}\r\n"
                  f"Content-Encoding: aws-chunked\r\n"
                  f"x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\r\n"
                  f"x-amz-decoded-content-length: {(5 << 30) + 1}\r\n"
                  f"Transfer-Encoding: chunked\r\n\r\n".encode())
        head, body = read_response(s)
        assert status(head) == 400 and code(body) == "EntityTooLarge", (head, body)
    finally:
        s.close()


def test_max_object_bytes_is_configurable(gateway, rgw, bucket):
    gw = gateway({"limits": {"max_object_bytes": 1000}})
    r = requests.put(f"{gw.url}/{bucket}/ok", data=b"a" * 1000, timeout=10)
    assert r.status_code == 200, r.text
    r = requests.put(f"{gw.url}/{bucket}/no", data=b"a" * 1001, timeout=10)
    assert r.status_code == 400 and code(r.content) == "EntityTooLarge", r.text
    keys = [o["Key"] for o in rgw.client().list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == ["ok"]


# ---- limits.discard_body_bytes ----


def test_refused_upload_without_expect_reads_the_error_not_epipe(gateway, bucket):
    """A 32 MiB PUT without Expect: 100-continue that the fence refuses: the
    client's sendall completes (no EPIPE or reset), it reads the S3 error,
    and the connection still serves the next request."""
    gw = gateway(fenced(bucket))
    size = 32 << 20
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
    try:
        s.sendall(f"PUT /{bucket}/orders/big HTTP/1.1\r\nHost: {gw.host}\r\n"
                  f"Content-Length: {size}\r\n\r\n".encode())
        chunk = b"z" * (1 << 20)
        for _ in range(size // len(chunk)):
            s.sendall(chunk)  # raised BrokenPipeError / ConnectionResetError before
        head, body = read_response(s)
        assert status(head) == 428, (head, body)  # no fencing token
        assert code(body) is not None
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: {gw.host}\r\n\r\n".encode())
        head, body = read_response(s)
        assert status(head) == 200 and body == b"ok\n"
    finally:
        s.close()


def test_refused_body_past_discard_bound_closes(gateway, bucket):
    """Past limits.discard_body_bytes the gateway does not read on: it answers
    with Connection: close and closes."""
    gw = gateway(fenced(bucket, limits={"discard_body_bytes": 1 << 20}))
    s = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
    try:
        s.sendall(f"PUT /{bucket}/orders/big HTTP/1.1\r\nHost: {gw.host}\r\n"
                  f"Content-Length: {8 << 20}\r\n\r\n".encode())
        head, body = read_response(s)
        assert status(head) == 428
        assert "connection: close" in head.lower()
    finally:
        s.close()


# ---- audit.queue_max: a refusal that cannot be audited is 503 SlowDown (G7) ----


def audit_ids(gw):
    r = requests.get(f"{gw.url}/_fencegate/v1/audit", params={"limit": 1000}, timeout=10)
    assert r.status_code == 200, r.text
    return {rec["request_id"] for rec in r.json()["records"]}


def test_full_audit_queue_answers_slowdown_never_an_unaudited_refusal(gateway, bucket):
    gw = gateway(fenced(bucket, audit={"queue_max": 1}))
    n = 64
    socks = [socket.create_connection(("127.0.0.1", gw.port), timeout=10) for _ in range(n)]
    try:
        reqs = [f"PUT /{bucket}/orders/k{i} HTTP/1.1\r\nHost: {gw.host}\r\n"
                f"Content-Length: 0\r\n\r\n".encode() for i in range(n)]
        for s, r in zip(socks, reqs):  # a burst: all in before any is answered
            s.sendall(r)
        answers = [read_response(s) for s in socks]
    finally:
        for s in socks:
            s.close()
    refused, slowed = [], 0
    for head, body in answers:
        st = status(head)
        if st == 503:
            assert code(body) == "SlowDown", body
            slowed += 1
        else:
            assert st == 428, (head, body)
            rid = [ln.split(":", 1)[1].strip() for ln in head.split("\r\n")
                   if ln.lower().startswith("x-amz-request-id:")][0]
            refused.append(rid)
    time.sleep(0.5)  # the store commits queued records within audit_flush_ms
    ids = audit_ids(gw)
    missing = [r for r in refused if r not in ids]
    assert not missing, f"{len(missing)} refusals without an audit record"
    assert slowed > 0, "the queue never filled: the test did not test anything"
    m = requests.get(f"{gw.url}/metrics", timeout=10).text
    assert f"audit_failures_total {slowed}" in m


# ---- /readyz while the upstream cannot be reached (G10) ----


def _metrics_ready(gw):
    m = requests.get(f"{gw.url}/metrics", timeout=10).text
    return [ln for ln in m.splitlines() if ln.startswith("fencegate_ready ")]


def test_readyz_unready_while_upstream_refuses_connections(gateway, rgw):
    """Three forwarded requests that cannot connect make the gateway unready,
    and /metrics says so too.  With FG_TEST_WORKERS=2 each request lands on
    whichever loop the kernel picks (SO_REUSEPORT), so the loops' failures
    must add up: the streak is the process's, not one loop's (DESIGN "Worker
    loops")."""
    port = _closed_port()
    gw = gateway({"upstream": {"endpoint": f"http://127.0.0.1:{port}"}})
    r = requests.get(f"{gw.url}/readyz", timeout=10)
    assert r.status_code == 200, r.text  # nothing has failed yet
    assert _metrics_ready(gw) == ["fencegate_ready 1"]
    for i in range(3):
        # a new connection each: with several loops they spread over them
        assert requests.get(f"{gw.url}/somebucket/k{i}", timeout=10).status_code == 502
    r = requests.get(f"{gw.url}/readyz", timeout=10)
    assert r.status_code == 503, r.text
    assert "upstream unreachable" in r.text
    assert str(port) in r.text  # the last failure's text, from whichever loop
    assert _metrics_ready(gw) == ["fencegate_ready 0"]
    assert requests.get(f"{gw.url}/healthz", timeout=10).status_code == 200  # alive, not ready

    # the upstream comes back: the first transfer that gets an answer clears it
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(4)
    stop = threading.Event()

    def answer():
        lsock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = lsock.accept()
            except socket.timeout:
                continue
            with conn:
                conn.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                             b"Connection: close\r\n\r\n")

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        assert requests.get(f"{gw.url}/somebucket/k", timeout=10).status_code == 404
        r = requests.get(f"{gw.url}/readyz", timeout=10)
        assert r.status_code == 200, r.text  # an answer on any loop clears it
        assert _metrics_ready(gw) == ["fencegate_ready 1"]
    finally:
        stop.set()
        t.join()
        lsock.close()


# ---- a HEAD answered with a body must not poison the upstream connection ----


def test_head_with_subresource_does_not_poison_the_connection(gateway, rgw, bucket):
    """RGW 16 answers HEAD /b/k?acl with the ACL document as a body (a HEAD
    must have none).  On a kept-alive connection the next answer would be read
    from the middle of it ("Received HTTP/0.9"), so the next request failed,
    and a PUT failed at the client although RGW had stored it.  With one
    upstream connection every request after such a HEAD reuses it."""
    gw = gateway({"upstream": {"max_connections": 1}})
    rgw.client().put_object(Bucket=bucket, Key="acl-k", Body=b"x")
    s = requests.Session()
    for i in range(10):
        r = s.head(f"{gw.url}/{bucket}/acl-k?acl", timeout=10)
        assert r.status_code < 500, (i, r.status_code)
        r = s.put(f"{gw.url}/{bucket}/after-{i}", data=b"y" * 100, timeout=10)
        assert r.status_code == 200, (i, r.status_code, r.text)
        r = s.get(f"{gw.url}/{bucket}/after-{i}", timeout=10)
        assert r.status_code == 200 and r.content == b"y" * 100, (i, r.status_code, r.text)
