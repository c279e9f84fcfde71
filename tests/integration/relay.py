"""A TCP relay for the integration tests: it sits between the gateway and RGW,
records what the gateway sends upstream and can delay a request; with a server
ssl context it is also the gateway's https upstream."""

import socket
import ssl
import threading
import time


def _listen(backlog):
    """A listening socket on a free loopback port."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(backlog)
    return lsock


def _accept_loop(lsock, stopped, handle):
    """Accept on lsock until stopped() or lsock is closed, handing each
    connection to handle(conn) in a thread of its own."""
    lsock.settimeout(0.2)
    while not stopped():
        try:
            c, _ = lsock.accept()
        except socket.timeout:
            continue
        except OSError:
            return  # closed by close()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


class DelayRelay:
    """A TCP relay between the gateway and RGW that holds a request carrying
    `x-test-delay-ms` for that long after receiving it completely, before
    passing it on, and answers one carrying `x-test-break` by closing the
    connection (a broken upstream).  The answer to a request carrying
    `x-test-tail-delay-ms` is passed on but for its last byte, which follows
    that long later (a store slow to finish its answer).  It simulates a slow upstream, not S3: RGW still stores.
    Every complete request it passes on is kept in `requests` (raw bytes),
    so tests can check what the gateway really sent upstream.

    With `tls` (an ssl.SSLContext for the server side) it speaks TLS to the
    gateway and plain HTTP to RGW: an https upstream.  `handshakes` counts
    the TLS handshakes that completed; a connection whose handshake fails is
    closed before anything is sent to RGW."""

    def __init__(self, upstream_port, tls=None):
        self.upstream_port = upstream_port
        self.tls = tls
        self.handshakes = 0
        self.lsock = _listen(32)
        self.port = self.lsock.getsockname()[1]
        self.stop = False
        self.log = []  # (event, monotonic time)
        self.requests = []  # raw requests as forwarded, in order
        self.live = set()  # the connections open on either side, cut by close()
        self.live_lock = threading.Lock()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self):
        _accept_loop(self.lsock, lambda: self.stop, self._connection)

    def _connection(self, c):
        if self.tls is not None:
            try:  # in the connection's thread: a slow handshake holds up no other
                c = self.tls.wrap_socket(c, server_side=True)
            except (ssl.SSLError, OSError):
                c.close()
                return
            self.handshakes += 1
        self._serve(c)

    @staticmethod
    def _read_message(sock, buf, is_response, head_only=False):
        """One message: (bytes, leftover).  Bodies by Content-Length, or (responses)
        chunked to the last chunk and its trailers.  The bytes gather in a
        bytearray, found in by offset: bytes += chunk copies the whole buffer
        each time, quadratic in a 40 MiB body (minutes, past RGW's idle timeout
        on the relay's connection to it)."""
        buf = bytearray(buf)

        def more():
            chunk = sock.recv(65536)
            buf.extend(chunk)
            return bool(chunk)

        while buf.find(b"\r\n\r\n") < 0:
            if not more():
                return None, bytes(buf)
        hend = buf.find(b"\r\n\r\n") + 4
        head = bytes(buf[:hend - 4])
        length = 0
        chunked = False
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
            elif k.strip().lower() == b"transfer-encoding" and b"chunked" in v.lower():
                chunked = True
        if head_only:
            length = 0
            chunked = False
        if chunked:
            pos = hend
            while True:  # walk the chunks: size line, data, CRLF; the last is "0"
                while buf.find(b"\r\n", pos) < 0:
                    if not more():
                        return None, b""
                eol = buf.find(b"\r\n", pos)
                size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
                if size == 0:
                    while buf.find(b"\r\n\r\n", eol) < 0:
                        if not more():
                            return None, b""
                    length = buf.find(b"\r\n\r\n", eol) + 4 - hend
                    break
                pos = eol + 2 + size + 2
                while len(buf) < pos:
                    if not more():
                        return None, b""
        while len(buf) < hend + length:
            if not more():
                return None, b""
        return bytes(buf[:hend + length]), bytes(buf[hend + length:])

    def _serve(self, c):
        up = socket.create_connection(("127.0.0.1", self.upstream_port))
        with self.live_lock:
            if self.stop:
                c.close()
                up.close()
                return
            self.live.update((c, up))
        buf = b""
        try:
            while not self.stop:
                req, buf = self._read_message(c, buf, False)
                if req is None:
                    return
                head = req.split(b"\r\n\r\n", 1)[0].lower()
                if b"\r\nx-test-break:" in head:
                    self.log.append(("broke", time.monotonic()))
                    return
                tag = None
                tail_delay = 0
                for line in head.split(b"\r\n"):
                    if line.startswith(b"x-test-tail-delay-ms:"):
                        tail_delay = int(line.split(b":")[1]) / 1000
                    if line.startswith(b"x-test-delay-ms:"):
                        delay = int(line.split(b":")[1]) / 1000
                        tag = line
                        self.log.append(("held", time.monotonic()))
                        time.sleep(delay)
                self.requests.append(req)
                up.sendall(req)
                if tag is not None:
                    self.log.append(("forwarded-delayed", time.monotonic()))
                elif head.startswith(b"put ") and b"~probe/" not in head.split(b"\r\n", 1)[0]:
                    # (the gateway's own start-up trailer probe is not the test's write)
                    self.log.append(("forwarded-put", time.monotonic()))
                resp, _ = self._read_message(up, b"", True, head_only=head.startswith(b"head "))
                if resp is None:
                    return
                if tail_delay:
                    c.sendall(resp[:-1])
                    self.log.append(("tail-held", time.monotonic()))
                    time.sleep(tail_delay)
                    c.sendall(resp[-1:])
                    continue
                c.sendall(resp)
        except OSError:
            return
        finally:
            with self.live_lock:
                self.live.discard(c)
                self.live.discard(up)
            c.close()
            up.close()

    def close(self):
        """The relay is gone: no new connection, and the open ones (a gateway's
        pooled keep-alive connections among them) are cut, so no request
        already waiting in a connection's thread is passed on after this."""
        with self.live_lock:
            self.stop = True
            for s in self.live:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.threads[0].join(5)
        self.lsock.close()


def split_request(raw):
    """(request line, {lowercase header: value}, body) of a raw HTTP/1.1 request."""
    head, body = raw.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return lines[0], headers, body


def _cut(s):
    """Shut a socket down, then close it.  close() alone, while another thread
    is blocked in recv on it, only drops the descriptor: the socket stays
    open, the peer gets no FIN and the recv no wake-up (a gateway's kept-alive
    connection from the relay stayed established, so its drain at the end of
    a test waited out its 10 s)."""
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass


class BlackholeRelay:
    """A plain TCP relay to 127.0.0.1:upstream_port that can be blackholed:
    after blackhole(), bytes in both directions are read and dropped (new
    connections are accepted and go nowhere), as a partition that neither
    refuses nor resets looks to a client.  restore() forwards again.  The
    request lines clients start are kept in `lines` with their monotonic
    time (only those forwarded)."""

    METHODS = (b"GET ", b"PUT ", b"POST ", b"DELETE ", b"HEAD ")

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.blackholed = False
        self.stop = False
        self.lines = []  # (monotonic, request line) of what clients started, as forwarded
        self.socks = []  # every connection, both sides: closed by close()
        self.lsock = _listen(64)
        self.port = self.lsock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=_accept_loop, args=(self.lsock, lambda: self.stop, self._connection),
                         daemon=True).start()

    def blackhole(self):
        self.blackholed = True

    def restore(self):
        self.blackholed = False

    def _connection(self, c):
        try:
            up = None if self.blackholed else socket.create_connection(
                ("127.0.0.1", self.upstream_port))
        except OSError:
            c.close()
            return
        self.socks += [c] if up is None else [c, up]
        if up is not None:
            threading.Thread(target=self._pump, args=(up, c, False), daemon=True).start()
        self._pump(c, up, True)

    def _pump(self, src, dst, from_client):
        try:
            while not self.stop:
                data = src.recv(65536)
                if not data:
                    break
                if not self.blackholed and dst is not None:
                    if from_client and data.startswith(self.METHODS):
                        self.lines.append((time.monotonic(),
                                           data.split(b"\r\n", 1)[0].decode("latin-1")))
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            if not self.blackholed:
                for s in (src, dst):
                    if s is not None:
                        _cut(s)

    def close(self):
        """Every connection is cut (_cut)."""
        self.stop = True
        self.lsock.close()
        for s in self.socks:
            _cut(s)
