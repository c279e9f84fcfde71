"""Worker loops (DESIGN "Worker loops"): `workers: 2` runs the control loop
and one worker loop on the same port.  The fence stays on the control loop;
a worker loop's fenced writes reach it by messages, and what only the
control loop serves (the JSON API, the status page, /metrics, /healthz)
crosses by the relay.  New connections spread over the two loops (the
acceptor gives each to the loop with the fewest, so a client's next one may
land on either; with "accept": "reuseport" the kernel's hash decides), so the
cross-loop cases are repeated on new connections until the gateway's log
shows the two writes asked the fence from different loops."""
import os
import re
import signal
import socket
import struct
import threading
import time

import pytest
import requests

from rawhttp import read_response, recv_answer, status
from relay import DelayRelay
from test_fencing import LOCK, boto3_with_token, grant, rgw_body, wait_audit

TRIES = 16  # tries until two ran cross-loop (by hash: 2^-16 that none does)


def fenced(gateway, bucket, endpoint=None, **extra):
    cfg = {"workers": 2, "log_level": "debug",
           "fences": [{"bucket": bucket, "prefix": "orders/", "lock": LOCK,
                       "require_token": True}]}
    if endpoint:
        cfg["upstream"] = {"endpoint": endpoint}
    cfg.update(extra)
    return gateway(cfg)


def loop_of(gw, token):
    """The loop whose fence port the write of token asked (from the debug log)."""
    pat = re.compile(rf"token {token} of lock {LOCK} asks the fence on loop (\d+)")
    for _ in range(100):
        m = pat.search(gw.log())
        if m:
            return int(m.group(1))
        time.sleep(0.02)
    raise AssertionError(f"no admission of token {token} in the log")


def test_unsent_older_write_is_cut_by_a_newer_epoch_on_another_loop(gateway, rgw, bucket):
    """G3 across loops: an epoch-k upload half sent on one loop is cut before
    its last byte when epoch k+1 writes through the other loop; nothing of it
    lands, the newer write does, and the cut is audited."""
    gw = fenced(gateway, bucket)
    size = 2 * 1024 * 1024
    crossed = 0
    for i in range(TRIES):
        old, new = 2 * i + 1, 2 * i + 2
        grant(gw, old)
        s = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
        s.sendall((f"PUT /{bucket}/orders/slow{i} HTTP/1.1\r\nHost: {gw.host}\r\n"
                   f"X-Fencing-Token: {old}\r\nContent-Length: {size}\r\n\r\n").encode())
        s.sendall(b"1" * (size // 2))
        loop_old = loop_of(gw, old)
        time.sleep(0.2)
        grant(gw, new)
        boto3_with_token(gw, new).put_object(Bucket=bucket, Key=f"orders/fast{i}",
                                             Body=b"newer")
        try:
            s.sendall(b"1" * (size // 2))
        except OSError:
            pass
        resp = recv_answer(s)
        s.close()
        assert resp.startswith(b"HTTP/1.1 409"), resp[:300]
        assert b"StaleFencingToken" in resp
        assert rgw_body(rgw, bucket, f"orders/slow{i}") is None
        assert rgw_body(rgw, bucket, f"orders/fast{i}") == b"newer"
        if loop_of(gw, new) != loop_old:
            crossed += 1
            if crossed == 2:
                break
    assert crossed >= 1, "every try ran both writes on one loop"
    assert "cut" in [r["kind"] for r in wait_audit(gw, 1, lock=LOCK)]


def test_sent_older_write_is_awaited_by_a_newer_epoch_on_another_loop(gateway, rgw, bucket):
    """G3 across loops: an epoch-k write completely sent (held upstream by the
    relay) is awaited, not cut, by epoch k+1's write on the other loop; the
    order at RGW proves it."""
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    try:
        gw = fenced(gateway, bucket, endpoint=f"http://127.0.0.1:{relay.port}")
        crossed = 0
        for i in range(TRIES):
            old, new = 2 * i + 1, 2 * i + 2
            grant(gw, old)
            relay.log.clear()
            out = {}

            def older():
                out["r"] = requests.put(f"{gw.url}/{bucket}/orders/race{i}", data=b"older",
                                        headers={"X-Fencing-Token": str(old),
                                                 "x-test-delay-ms": "800"}, timeout=30)

            th = threading.Thread(target=older)
            th.start()
            for _ in range(250):
                if any(e == "held" for e, _ in relay.log):
                    break
                time.sleep(0.02)
            grant(gw, new)
            t0 = time.monotonic()
            r2 = requests.put(f"{gw.url}/{bucket}/orders/race{i}", data=b"newer",
                              headers={"X-Fencing-Token": str(new)}, timeout=30)
            waited = time.monotonic() - t0
            th.join(30)
            assert out["r"].status_code == 200, out["r"].text
            assert r2.status_code == 200, r2.text
            assert waited > 0.3, waited
            assert rgw_body(rgw, bucket, f"orders/race{i}") == b"newer"
            if loop_of(gw, new) != loop_of(gw, old):
                crossed += 1
                if crossed == 2:
                    break
        assert crossed >= 1, "every try ran both writes on one loop"
    finally:
        relay.close()


def takes_of(gw, rids):
    """rid -> the (loop, relayed) of every connection that took request rid,
    from the debug log's line for each request head (a relayed request keeps
    its worker request's id on the control loop)."""
    pat = re.compile(r"([^\s\"]+) \S+ [A-Z]+ \S+ on loop (\d+)(, relayed)?")
    takes = {rid: [] for rid in rids}
    for m in pat.finditer(gw.log()):
        if m.group(1) in takes:
            takes[m.group(1)].append((int(m.group(2)), m.group(3) is not None))
    return takes


def test_control_only_requests_cross_from_every_loop(gateway, rgw, bucket, tmp_path):
    """The JSON API (acquire, renew, list), /metrics and /healthz answer the
    same on every connection, whichever loop took it; a lease acquired
    through one loop renews through the other.  The log proves the crossing:
    each request was taken either on the control loop and served there, or
    on the worker loop and then again on the control loop by the relay, and
    both kinds happened."""
    gw = fenced(gateway, bucket, election={"backend": "dir", "path": str(tmp_path / "locks"),
                                           "min_lease_ms": 200})
    deadline = time.monotonic() + 20  # the election's start-up self-test
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline, requests.get(f"{gw.url}/readyz", timeout=5).text
        time.sleep(0.1)
    rids = []

    def rid(r):
        rids.append(r.headers["x-amz-request-id"])
        return r

    r = rid(requests.post(f"{gw.url}/_fencegate/v1/locks/orders/acquire",
                          json={"holder": "w1", "lease_ms": 10000}, timeout=10))
    assert r.status_code == 200, r.text
    lease = r.json()
    for i in range(12):  # new connections: both loops
        m = rid(requests.get(f"{gw.url}/metrics", timeout=10))
        assert m.status_code == 200 and "fencegate_requests_total" in m.text
        assert rid(requests.get(f"{gw.url}/healthz", timeout=10)).text == "ok\n"
        rr = rid(requests.post(f"{gw.url}/_fencegate/v1/locks/orders/renew",
                               json={"token": lease["token"], "lease_id": lease["lease_id"]},
                               timeout=10))
        assert rr.status_code == 200, rr.text
        ls = rid(requests.get(f"{gw.url}/_fencegate/v1/locks", timeout=10))
        assert ls.status_code == 200 and "orders" in ls.text
    # a keep-alive session: the relay answers with this loop's own framing
    session = []
    with requests.Session() as s:
        for _ in range(5):
            assert rid(s.get(f"{gw.url}/healthz", timeout=10)).status_code == 200
            assert rid(s.get(f"{gw.url}/_fencegate/v1/locks/orders",
                             timeout=10)).status_code == 200
            session += rids[-2:]
    takes = takes_of(gw, rids)
    direct = {x for x in rids if takes[x] == [(0, False)]}
    relayed = {x for x in rids if sorted(takes[x]) == [(0, True), (1, False)]}
    assert direct | relayed == set(rids), {x: takes[x] for x in set(rids) - direct - relayed}
    assert direct, "no request was taken on the control loop"
    assert relayed, "no request was taken on the worker loop and relayed"
    # one connection, one loop: every answer of the session came the same way
    assert set(session) <= direct or set(session) <= relayed, {x: takes[x] for x in session}
    # the fenced writes with that lease's token go through either loop
    c = boto3_with_token(gw, lease["token"])
    for i in range(6):
        c.put_object(Bucket=bucket, Key=f"orders/k{i}", Body=b"x")


def test_drain_finishes_a_held_write_on_a_worker_loop(gateway, rgw, bucket):
    """SIGTERM while fenced writes are held upstream on both loops: they finish
    (the control loop stays up until every worker loop has drained), then the
    gateway exits 0."""
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    try:
        gw = fenced(gateway, bucket, endpoint=f"http://127.0.0.1:{relay.port}")
        grant(gw, 1)
        out = []

        def put(i):
            out.append(requests.put(f"{gw.url}/{bucket}/orders/drain{i}", data=b"d",
                                    headers={"X-Fencing-Token": "1",
                                             "x-test-delay-ms": "1000"}, timeout=30))

        ths = [threading.Thread(target=put, args=(i,)) for i in range(6)]
        for t in ths:
            t.start()
        for _ in range(250):
            if sum(1 for e, _ in relay.log if e == "held") >= 6:
                break
            time.sleep(0.02)
        os.kill(gw.pid, signal.SIGTERM)
        for t in ths:
            t.join(30)
        assert [r.status_code for r in out] == [200] * 6
        for _ in range(200):
            if not gw.alive():
                break
            time.sleep(0.05)
        assert not gw.alive()
        assert gw.proc.wait(5) == 0
        for i in range(6):
            assert rgw_body(rgw, bucket, f"orders/drain{i}") == b"d"
    finally:
        relay.close()


def _put(sock, gw, bucket, key, token, body, *extra):
    sock.sendall((f"PUT /{bucket}/{key} HTTP/1.1\r\nHost: {gw.host}\r\n"
                  f"X-Fencing-Token: {token}\r\n" + "".join(f"{h}\r\n" for h in extra) +
                  f"Content-Length: {len(body)}\r\n\r\n").encode() + body)


def _last_loop(gw, token, seen):
    """The loop of the newest admission of token, once more than seen of them are logged."""
    pat = re.compile(rf"token {token} of lock {LOCK} asks the fence on loop (\d+)")
    for _ in range(250):
        hits = pat.findall(gw.log())
        if len(hits) > seen:
            return int(hits[-1])
        time.sleep(0.02)
    raise AssertionError(f"no new admission of token {token} in the log")


def test_drain_awaits_a_write_whose_client_left_on_a_worker_loop(gateway, rgw, bucket):
    """G3 at SIGTERM: an epoch-k write completely sent from a worker loop whose
    client then left (the relay still holds it, then passes it to RGW) keeps
    that loop, and so the barrier, until its outcome: epoch k+1's write,
    waiting on the control loop, goes after it, and the newer body is the one
    RGW keeps. Ending the worker loop once its connections were gone released
    the older write's ticket while the store could still commit it."""
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    socks = []
    try:
        gw = fenced(gateway, bucket, endpoint=f"http://127.0.0.1:{relay.port}")
        old, new = 1, 2
        grant(gw, old)
        # one connection on each loop: the hand-out gives each the loop with the fewest
        by_loop = {}
        for i in range(8):
            c = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
            socks.append(c)
            seen = len(re.findall(rf"token {old} of lock {LOCK} asks", gw.log()))
            _put(c, gw, bucket, f"orders/probe{i}", old, b"probe")
            head, _ = read_response(c)
            assert status(head) == 200, head
            by_loop.setdefault(_last_loop(gw, old, seen), c)
            if len(by_loop) == 2:
                break
        assert sorted(by_loop) == [0, 1], by_loop
        a, b = by_loop[1], by_loop[0]  # the older write on the worker loop

        _put(a, gw, bucket, "orders/drained", old, b"older", "x-test-delay-ms: 3000")
        for _ in range(250):
            if any(e == "held" for e, _ in relay.log):
                break
            time.sleep(0.02)
        grant(gw, new)
        _put(b, gw, bucket, "orders/drained", new, b"newer")
        assert _last_loop(gw, new, 0) == 0
        a.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        a.close()  # reset: the older write's client is gone, its write sent whole
        socks.remove(a)
        for _ in range(250):
            if "after the whole write was sent; awaiting" in gw.log():
                break
            time.sleep(0.02)
        else:
            raise AssertionError("the older write was not detached")
        t0 = time.monotonic()
        os.kill(gw.pid, signal.SIGTERM)
        head, body = read_response(b, timeout=30)
        waited = time.monotonic() - t0
        assert status(head) == 200, (head, body)
        assert waited > 0.5, waited  # behind the older write's outcome, not at once
        for _ in range(200):
            if not gw.alive():
                break
            time.sleep(0.05)
        assert gw.proc.wait(10) == 0
        assert "fenced write(s) whose client left still await" in gw.log()
        assert rgw_body(rgw, bucket, "orders/drained") == b"newer"
    finally:
        for c in socks:
            c.close()
        relay.close()


def test_an_upload_id_reaches_its_client_only_once_recorded(gateway, rgw, bucket):
    """An upload is recorded before its client learns its id: the store
    finishes its CreateMultipartUpload answer late (the relay holds the last
    byte 1.5 s), and a tokenless UploadPart sent on another connection the
    moment the id is readable is claimed with the upload's epoch (200), on
    whichever loop takes it.  Passing the answer on as it came let the client
    read the id while the gateway, waiting for the answer's end to record it,
    did not know the upload yet: a spurious 428, audited."""
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]))
    socks = []
    try:
        gw = fenced(gateway, bucket, endpoint=f"http://127.0.0.1:{relay.port}")
        grant(gw, 1)
        a = socket.create_connection(("127.0.0.1", gw.port), timeout=30)
        b = socket.create_connection(("127.0.0.1", gw.port), timeout=30)  # the other loop
        socks += [a, b]
        a.sendall((f"POST /{bucket}/orders/mp?uploads HTTP/1.1\r\nHost: {gw.host}\r\n"
                   "X-Fencing-Token: 1\r\nx-test-tail-delay-ms: 1500\r\n"
                   "Content-Length: 0\r\n\r\n").encode())
        got = b""
        while True:
            chunk = a.recv(65536)
            assert chunk, got
            got += chunk
            m = re.search(rb"<UploadId>([^<]+)</UploadId>", got)
            if m:
                break
        seen = time.monotonic()
        up = m.group(1).decode()
        b.sendall((f"PUT /{bucket}/orders/mp?partNumber=1&uploadId={up} HTTP/1.1\r\n"
                   f"Host: {gw.host}\r\nContent-Length: 4\r\n\r\npart").encode())
        head, body = read_response(b, timeout=30)
        assert status(head) == 200, (head, body)
        held = [t for e, t in relay.log if e == "tail-held"]
        assert held and seen - held[0] > 1.0, (held, seen)  # after the store's last byte
        parts = rgw.client().list_parts(Bucket=bucket, Key="orders/mp", UploadId=up)
        assert [p["PartNumber"] for p in parts.get("Parts", [])] == [1]
        rgw.client().abort_multipart_upload(Bucket=bucket, Key="orders/mp", UploadId=up)
    finally:
        for c in socks:
            c.close()
        relay.close()


def _metric(gw, name, labels=""):
    m = requests.get(f"{gw.url}/metrics", timeout=10).text
    got = re.search(rf"^{re.escape(name + labels)} (\d+)$", m, re.M)
    return int(got.group(1)) if got else 0


def test_relayed_request_counted_once(gateway, rgw, bucket):
    """A CreateBucket a worker loop takes is relayed to the control loop (its
    probe is the control loop's): it is one request received and one
    request answered, whichever loop took it."""
    gw = fenced(gateway, bucket)
    received = _metric(gw, "fencegate_requests_received_total")
    answered = _metric(gw, "fencegate_requests_total", '{operation="CreateBucket",code="200"}')
    for _ in range(TRIES):  # new connections: both loops
        r = requests.put(f"{gw.url}/{bucket}", timeout=10)
        assert r.status_code == 200, r.text
    # the TRIES, the scrape of answered and this scrape itself
    assert _metric(gw, "fencegate_requests_received_total") - received == TRIES + 2
    assert _metric(gw, "fencegate_requests_total",
                   '{operation="CreateBucket",code="200"}') - answered == TRIES


def test_default_is_one_loop_per_cpu(gateway):
    """Without `workers` the gateway serves on one loop per CPU it may use
    (sched_getaffinity, as nginx's `worker_processes auto`); the tests'
    default of two (conftest) is taken out of the config."""
    cpus = min(len(os.sched_getaffinity(0)), 256)
    if cpus < 2:
        pytest.skip("one CPU: one loop, and nothing to tell it from workers: 1")
    gw = gateway({"workers": None})
    assert "\"workers\"" not in gw.config_path.read_text()
    assert f"{cpus} event loops serve clients (workers: 0)" in gw.log()
