"""Memory through the real binary: the heap the gateway keeps under load (a
high malloc trim threshold, so busy runs do not give pages back only to fault
them in again) is handed back once load stops (gateway/http/heap.c,
GW_HTTP_HEAP_TRIM_MS)."""

import os
import socket
import time

import pytest

MIB = 1 << 20


def _rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _wait(pred, timeout):
    end = time.monotonic() + timeout
    while not pred() and time.monotonic() < end:
        time.sleep(0.1)
    return pred()


def test_heap_handed_back_once_load_stops(gateway, rgw, bucket):
    """32 clients GET an 8 MiB object and read nothing for a while: past what
    the sockets hold, the gateway buffers up to limits.buffer_bytes a side for
    each, and its resident size grows by megabytes.  Once they have read everything and no
    request came for a while, it is back near where it started."""
    gw = gateway({"limits": {"max_connections_per_client": 64, "max_transfers_per_client": 64},
                  "upstream": {"max_connections": 64}})
    with open(f"/proc/{gw.pid}/maps") as f:
        if "libasan" in f.read():
            pytest.skip("ASan's allocator keeps its own heap; malloc_trim does not reach it")
    obj = os.urandom(8 * MIB)
    rgw.client().put_object(Bucket=bucket, Key="big", Body=obj)
    base = _rss(gw.pid)
    socks = []
    try:
        for _ in range(32):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before the window is set
            s.settimeout(10)
            s.connect(("127.0.0.1", gw.port))
            s.sendall(f"GET /{bucket}/big HTTP/1.1\r\nHost: {gw.host}\r\n\r\n".encode())
            socks.append(s)
        grown = _wait(lambda: _rss(gw.pid) >= base + 8 * MIB, 20)
        peak = _rss(gw.pid)
        assert grown, f"resident {base / MIB:.1f} -> {peak / MIB:.1f} MiB: the load did not grow it\n{gw.log(tail=30)}"
        for s in socks:
            data = b""
            while b"\r\n\r\n" not in data:
                data += s.recv(65536)
            body = data.split(b"\r\n\r\n", 1)[1]
            while len(body) < len(obj):
                chunk = s.recv(1 << 20)
                assert chunk, "closed inside the body"
                body += chunk
            assert body == obj
    finally:
        for s in socks:
            s.close()
    # no request since: within a few idle ticks the heap is handed back
    back = _wait(lambda: _rss(gw.pid) <= base + 4 * MIB, 10)
    assert back, (f"resident {base / MIB:.1f} MiB before, {peak / MIB:.1f} under load, "
                  f"{_rss(gw.pid) / MIB:.1f} ten seconds after")
