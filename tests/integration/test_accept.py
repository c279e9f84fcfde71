"""Accepting with the acceptor (DESIGN "Worker loops", "Accepting"):
`"accept": "acceptor"`, the default, has the control loop accept every
connection on the S3 ports and hand it to the loop with room and the fewest
open connections, so the loops share the connections evenly, whatever the
kernel's hash would have done, and limits.max_connections holds for the
process, not per loop; "reuseport" leaves the choice to the kernel.
Which loop took a request is read from the debug log ("... on loop N")."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time

import requests

from conftest import free_port
from test_workers import takes_of

LOOPS = 4


def acceptor(gateway, bucket, loops=LOOPS, **extra):
    cfg = {"workers": loops, "accept": "acceptor", "log_level": "debug"}
    cfg.update(extra)
    return gateway(cfg)


def wait_open(gw, n, timeout=10):
    """Waits until the gateway has exactly n client connections open and
    none on its way to a loop, by its debug log's lines.  A close is the
    loop's to see after the client's (the readiness probe's, one just closed
    by the test), and a connection accepted is open only once its loop has
    taken it in: until then the acceptor's counts, and so its choices, are
    not the test's."""
    deadline = time.monotonic() + timeout
    while True:
        log = gw.log()
        opened = re.findall(r": connection opened on loop (\d+)", log)
        now = len(opened) - len(re.findall(r": connection closed on loop \d+", log))
        handed = len(re.findall(r": connection handed to loop \d+", log))
        taken = sum(1 for loop in opened if loop != "0")  # a loop's own are never handed
        if now == n and handed == taken:
            return
        assert time.monotonic() < deadline, (f"{now} connections open, not {n}", log[-3000:])
        time.sleep(0.02)


def connect(gw, n):
    """n new connections, once the gateway has none and until it has taken all n."""
    wait_open(gw, 0)
    conns = [socket.create_connection(("127.0.0.1", gw.port), timeout=10) for _ in range(n)]
    wait_open(gw, n)
    return conns


def head(gw, path, rid):
    return (f"GET {path} HTTP/1.1\r\nHost: {gw.host}\r\n"
            f"x-amz-request-id: {rid}\r\n\r\n").encode()


def loops_of(gw, rids):
    """rid -> the loop that took it from its client (a relayed request is
    taken again on loop 0: the first take is its client's loop)."""
    takes = takes_of(gw, rids)
    out = {}
    for rid, t in takes.items():
        direct = [loop for loop, relayed in t if not relayed]
        assert len(direct) == 1, (rid, t)
        out[rid] = direct[0]
    return out


def answer(s):
    """The answer to the request just sent on s: (status, its request id)."""
    r = http.client.HTTPResponse(s)
    r.begin()
    r.read()
    return r.status, r.getheader("x-fencegate-request-id") or r.getheader("x-amz-request-id")


def ask(gw, conns, bucket, tag):
    """One request on each open connection, in turn; returns their ids."""
    rids = []
    for i, s in enumerate(conns):
        s.sendall(head(gw, f"/{bucket}/", f"{tag}{i}"))
        st, rid = answer(s)
        assert st == 200, st
        rids.append(rid)
    return rids


def test_connections_are_shared_evenly(gateway, rgw, bucket):
    """2 x LOOPS kept-alive connections: each loop takes exactly two (by the
    kernel's hash alone, that happens 4 % of the time)."""
    gw = acceptor(gateway, bucket)
    assert "the control loop handing out every connection" in gw.log()
    conns = connect(gw, 2 * LOOPS)
    try:
        rids = ask(gw, conns, bucket, "even")
        per = loops_of(gw, rids)
        counts = [list(per.values()).count(n) for n in range(LOOPS)]
        assert counts == [2] * LOOPS, counts
        # a connection stays on its loop
        again = loops_of(gw, ask(gw, conns, bucket, "again"))
        assert list(again.values()) == [per[r] for r in rids]
    finally:
        for s in conns:
            s.close()
    # closed ones free their loops: new connections fill them again evenly
    conns = connect(gw, LOOPS)
    try:
        per = loops_of(gw, ask(gw, conns, bucket, "refill"))
        assert sorted(per.values()) == list(range(LOOPS)), per
    finally:
        for s in conns:
            s.close()


def test_max_connections_holds_for_the_process(gateway, rgw, bucket):
    """limits.max_connections 4 on two loops: four busy connections are
    admitted, wherever they land; a fifth waits in the backlog (not refused)
    and is served as soon as a worker loop's connection closes: the worker
    wakes the paused acceptor."""
    gw = acceptor(gateway, bucket, loops=2,
                  limits={"max_connections": 4, "max_connections_per_client": 8})
    conns = connect(gw, 4)
    extra = None
    try:
        per = loops_of(gw, ask(gw, conns, bucket, "busy"))
        assert sorted(per.values()) == [0, 0, 1, 1], per
        for s in conns:  # busy: a head begun, so none is idle to be shed
            s.sendall(f"GET /{bucket}/ HTTP/1.1\r\nHost: {gw.host}\r\n".encode())
        time.sleep(0.3)
        extra = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
        extra.sendall(head(gw, f"/{bucket}/", "fifth"))
        extra.settimeout(1.5)
        try:
            got = extra.recv(100)
            raise AssertionError(f"a fifth connection was served or closed: {got!r}")
        except socket.timeout:
            pass
        assert "not accepting more" in gw.log()
        worker = [i for i, rid in enumerate(per) if per[rid] == 1][0]
        conns[worker].close()
        extra.settimeout(10)
        assert answer(extra)[0] == 200
    finally:
        for s in conns:
            s.close()
        if extra is not None:
            extra.close()


def test_at_the_limit_an_idle_connection_makes_room(gateway, rgw, bucket):
    """limits.max_connections 4 on two loops, all four kept alive and idle:
    each new client is served at once, handed to a loop that closes its
    oldest idle connection for it (one of the four old ones)."""
    gw = acceptor(gateway, bucket, loops=2,
                  limits={"max_connections": 4, "max_connections_per_client": 8})
    old = connect(gw, 4)
    new = []
    try:
        assert sorted(loops_of(gw, ask(gw, old, bucket, "idle")).values()) == [0, 0, 1, 1]
        for i in range(2):
            t0 = time.monotonic()
            s = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
            new.append(s)
            ask(gw, [s], bucket, f"new{i}")
            assert time.monotonic() - t0 < 1.0
        closed = 0
        for s in old:
            s.settimeout(0.5)
            try:
                closed += s.recv(1) == b""
            except socket.timeout:
                pass
        assert closed == 2, closed
    finally:
        for s in old + new:
            s.close()


def closed(s, wait):
    """Whether the gateway closed s (EOF) within wait seconds."""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False


def test_the_oldest_idle_connection_is_shed_first_across_loops(gateway, rgw, bucket):
    """limits.max_connections 8 on two loops, all eight kept alive and idle,
    the four on loop 0 used again so that loop 1 holds the four oldest:
    three new clients are each handed to loop 1, which sheds its oldest, so
    the process sheds oldest first as one loop does, whatever turn the
    hand-out is at."""
    gw = acceptor(gateway, bucket, loops=2,
                  limits={"max_connections": 8, "max_connections_per_client": 100})
    conns = connect(gw, 8)
    new = []
    try:
        rids = ask(gw, conns, bucket, "first")
        per = loops_of(gw, rids)
        on = {n: [conns[i] for i, rid in enumerate(rids) if per[rid] == n] for n in (0, 1)}
        assert len(on[0]) == len(on[1]) == 4, per
        ask(gw, on[0], bucket, "again")  # loop 1's four are now the oldest idle ones
        for i in range(3):
            s = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
            new.append(s)
            ask(gw, [s], bucket, f"new{i}")
        assert [closed(s, 0.5) for s in on[1]] == [True, True, True, False]
        assert not any(closed(s, 0.05) for s in on[0])
    finally:
        for s in conns + new:
            s.close()


def sockets_to(pid, port):
    """The TCP connections process pid holds to 127.0.0.1:port, by the
    kernel's tables (/proc), not by what the process says of itself."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()  # sl local rem st ... uid timeout inode
                rem_port = int(fields[2].rsplit(":", 1)[1], 16)
                if rem_port == port and fields[3] != "0A" and fields[9] in inodes:
                    n += 1
    return n


def upstream_conns(gw):
    """(open, idle) upstream connections, by /metrics."""
    text = requests.get(f"{gw.url}/metrics", timeout=5).text
    got = {}
    for line in text.splitlines():
        for kind in ("open", "idle"):
            if line.startswith(f"fencegate_upstream_connections_{kind} "):
                got[kind] = int(float(line.split()[1]))
    return got["open"], got["idle"]


def one_upstream_connection(gateway, rgw, bucket, timeout_ms, n):
    """Two loops sharing upstream.max_connections 1, a 48 MiB object "big"
    (far more than the socket buffers take while its client does not read),
    and n client connections spread over the loops."""
    rgw.client().put_object(Bucket=bucket, Key="big", Body=b"b" * (48 << 20))
    gw = acceptor(gateway, bucket, loops=2,
                  upstream={"max_connections": 1, "timeout_ms": timeout_ms},
                  limits={"buffer_bytes": 4096, "max_transfers_per_client": 100})
    return gw, connect(gw, n)


def test_upstream_max_connections_holds_for_the_process(gateway, rgw, bucket):
    """upstream.max_connections 1 on two loops: requests on either loop, in
    turn, are all served, and never more than one upstream connection is
    open: the loop holding it idle closes it for the loop that waits when
    that loop asks; and a loop whose transfer ends while the other loop
    waits closes the connection instead of keeping it idle.  Each well
    within the upstream timeout, which is how long a request would wait
    for a connection kept idle on the other loop."""
    gw, conns = one_upstream_connection(gateway, rgw, bucket, 8000, 2)
    try:
        rids = []
        for turn in range(6):
            for i, s in enumerate(conns):
                t0 = time.monotonic()
                s.sendall(head(gw, f"/{bucket}/", f"cap{turn}-{i}"))
                st, rid = answer(s)
                took = time.monotonic() - t0
                assert st == 200 and took < 4, (st, took)
                rids.append(rid)
                held = sockets_to(gw.pid, rgw.port)
                opened, idle = upstream_conns(gw)
                assert held <= 1 and opened <= 1 and idle <= 1, (held, opened, idle, turn, i)
        per = loops_of(gw, rids)
        assert sorted(set(per.values())) == [0, 1], per
        # the one connection busy on one loop (its client not reading) while
        # the other loop's request waits: nothing is idle, so there is no one
        # to ask; when the transfer ends, its loop closes the connection
        busy, waits = conns[1], conns[0]
        busy.sendall(head(gw, f"/{bucket}/big", "busy"))
        time.sleep(0.5)
        waits.sendall(head(gw, f"/{bucket}/", "waits"))
        time.sleep(0.5)
        assert sockets_to(gw.pid, rgw.port) == 1  # the waiting loop opened none
        st, _ = answer(busy)
        assert st == 200
        t0 = time.monotonic()  # from the transfer's end: 48 MiB takes seconds under TSan
        st, _ = answer(waits)
        took = time.monotonic() - t0
        assert st == 200 and took < 4, (st, took)
        assert sockets_to(gw.pid, rgw.port) <= 1
    finally:
        for s in conns:
            s.close()


def test_no_loop_starves_another_at_the_upstream_cap(gateway, rgw, bucket):
    """upstream.max_connections 1 on two loops; one loop has two transfers
    (the first holding the connection, its client not reading; the second
    waiting in line), the other loop one, waiting and holding nothing.  When
    the first ends, its loop hands the connection over to the loop that
    holds nothing instead of giving it to its own second transfer, whose
    client does not read either and would keep it: the other loop's
    request is served well within the upstream timeout, not refused at it.
    The wait is timed from the first transfer's end, not from the request:
    reading 48 MiB takes seconds under ThreadSanitizer (3.03 s once in CI)."""
    gw, conns = one_upstream_connection(gateway, rgw, bucket, 10000, 3)
    try:
        per = loops_of(gw, ask(gw, conns, bucket, "where"))
        by_loop = {}
        for s, loop in zip(conns, per.values()):
            by_loop.setdefault(loop, []).append(s)
        (a1, a2), (b1,) = sorted(by_loop.values(), key=len, reverse=True)
        a1.sendall(head(gw, f"/{bucket}/big", "first"))  # holds the connection, unread
        time.sleep(0.5)
        a2.sendall(head(gw, f"/{bucket}/big", "second"))  # in its loop's line
        time.sleep(0.3)
        b1.sendall(head(gw, f"/{bucket}/", "other"))  # the other loop, holding nothing
        time.sleep(0.3)
        st, _ = answer(a1)  # the first transfer ends
        assert st == 200
        t0 = time.monotonic()
        st, _ = answer(b1)
        took = time.monotonic() - t0
        assert st == 200 and took < 3, (st, took)
        st, _ = answer(a2)
        assert st == 200
    finally:
        for s in conns:
            s.close()


def test_tls_connections_are_handed_out(gateway, rgw, bucket, tmp_path):
    """A TLS listener: the loops the acceptor hands connections to finish the
    handshake with the listener's certificate, and serve."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    port = free_port()
    gw = gateway({"workers": 2, "accept": "acceptor", "log_level": "debug",
                  "listen": [{"address": f"127.0.0.1:{port}", "tls_cert": str(cert),
                              "tls_key": str(key)}]}, port=port, wait=False)
    url = f"https://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            if requests.get(f"{url}/healthz", timeout=5, verify=str(cert)).status_code == 200:
                break
        except requests.RequestException:
            pass
        assert time.monotonic() < deadline, gw.log()[-2000:]
        time.sleep(0.1)
    rids = []
    for _ in range(4):  # new connections, in turn on each loop
        r = requests.get(f"{url}/{bucket}/", timeout=10, verify=str(cert))
        assert r.status_code == 200, r.text
        rids.append(r.headers.get("x-fencegate-request-id") or r.headers["x-amz-request-id"])
    assert set(loops_of(gw, rids).values()) == {0, 1}


def test_reuseport_lets_the_kernel_spread_them(gateway, rgw, bucket):
    """"accept": "reuseport": every loop listens on the port itself and the
    kernel's hash spreads new connections; over 16 both loops take some
    (all on one: 2^-15), and nothing is handed out."""
    gw = acceptor(gateway, bucket, loops=2, accept="reuseport")
    assert "handing out" not in gw.log()
    rids = []
    for _ in range(16):
        with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:
            rids += ask(gw, [s], bucket, "hash")
    assert set(loops_of(gw, rids).values()) == {0, 1}


def test_a_reload_keeps_the_way_of_accepting(gateway, rgw, bucket):
    """SIGHUP with another "accept": the loops keep the way they started
    with, the log says a restart takes it, and they keep serving."""
    gw = acceptor(gateway, bucket, loops=2)
    gw.config["accept"] = "reuseport"
    gw.config_path.write_text(json.dumps(gw.config, indent=2) + "\n")
    os.kill(gw.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "accept: the loops keep getting connections as at start" not in gw.log():
        assert time.monotonic() < deadline, gw.log()[-2000:]
        time.sleep(0.05)
    conns = connect(gw, 4)
    try:
        per = loops_of(gw, ask(gw, conns, bucket, "reloaded"))
        assert sorted(per.values()) == [0, 0, 1, 1], per  # handed out, as before
    finally:
        for s in conns:
            s.close()


def test_unknown_accept_mode_is_refused(gateway, tmp_path):
    gw = gateway({"accept": "kernel"}, wait=False)
    deadline = time.monotonic() + 10
    while gw.proc.poll() is None:
        assert time.monotonic() < deadline, "the gateway started with accept: kernel"
        time.sleep(0.05)
    assert gw.proc.returncode != 0
    assert 'accept: must be "acceptor" or "reuseport"' in gw.log()


def test_a_relay_takes_no_place_at_the_connection_limit(gateway, rgw, bucket, tmp_path):
    """limits.max_connections 2 on two loops.  A client on the worker loop
    waits in a relayed call (an acquire of a held lock, up to its wait_ms),
    so the control loop serves the relay all along.  A new client is still
    served at once: the process has two client connections, its limit, and
    the relay takes no place of its own (its client's connection is the one
    counted, on its loop); counted, it would fill the control loop's share
    and the new client would wait until the call returned."""
    gw = acceptor(gateway, bucket, loops=2,
                  limits={"max_connections": 2, "max_connections_per_client": 8},
                  election={"backend": "dir", "path": str(tmp_path / "locks")})
    deadline = time.monotonic() + 20  # the election's start-up self-test
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    r = requests.post(f"{gw.url}/_fencegate/v1/locks/orders/acquire",
                      json={"holder": "w1", "lease_ms": 30000}, timeout=10)
    assert r.status_code == 200, r.text
    conns = connect(gw, 2)  # one on each loop
    waiter = None
    try:
        per = loops_of(gw, ask(gw, conns, bucket, "where"))
        waiter, other = (conns[0], conns[1]) if list(per.values())[0] == 1 else (conns[1], conns[0])
        other.close()
        conns = [waiter]
        body = json.dumps({"holder": "w2", "lease_ms": 30000, "wait_ms": 3000}).encode()
        t0 = time.monotonic()
        waiter.sendall((f"POST /_fencegate/v1/locks/orders/acquire HTTP/1.1\r\nHost: {gw.host}\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                        ).encode() + body)
        time.sleep(0.5)  # relayed, and waiting on the control loop
        s = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
        conns.append(s)
        s.sendall(head(gw, f"/{bucket}/", "newcomer"))
        s.settimeout(2)
        st, _ = answer(s)
        assert st == 200 and time.monotonic() - t0 < 2, time.monotonic() - t0
        waiter.settimeout(10)
        st, _ = answer(waiter)  # the call itself is not disturbed: held past its wait
        assert st == 409 and time.monotonic() - t0 >= 2.9, (st, time.monotonic() - t0)
    finally:
        for s in conns:
            s.close()


def test_client_connections_gauge_counts_clients_not_relays(gateway, rgw, bucket):
    """fencegate_client_connections_open counts the clients' connections:
    two kept-alive connections, one on each loop, each scrape /metrics in
    turn, and both read 2, the scrape the worker loop relays to the control
    loop as well as the one the control loop serves itself."""
    gw = acceptor(gateway, bucket, loops=2)
    conns = connect(gw, 2)  # one on each loop
    try:
        rids = []
        for _ in range(3):
            for s in conns:
                s.sendall(f"GET /metrics HTTP/1.1\r\nHost: {gw.host}\r\n\r\n".encode())
                r = http.client.HTTPResponse(s)
                r.begin()
                text = r.read().decode()
                rids.append(r.getheader("x-amz-request-id"))
                got = [line for line in text.splitlines()
                       if line.startswith("fencegate_client_connections_open ")]
                assert got == ["fencegate_client_connections_open 2"], got
        assert sorted(set(loops_of(gw, rids).values())) == [0, 1]
    finally:
        for s in conns:
            s.close()
