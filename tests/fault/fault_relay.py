#!/usr/bin/python3
"""A fault-injecting TCP relay between one gateway and RGW (a separate process).

    fault_relay.py --upstream-port U --port P --log FILE [--seed N]
                   [--p-delay 0.3] [--max-delay-ms 250]
                   [--p-hold 0.3] [--max-hold-ms 250]
                   [--p-long-hold 0] [--long-hold-ms 5000]

For each request the gateway sends upstream it may

  * delay:  hold the request head for up to --max-delay-ms before passing it
            on (for a zero-length body this holds the whole request);
  * hold:   pass the body on except its last bytes, wait until the gateway has
            sent the whole body, then sit on those last bytes for up to
            --max-hold-ms before passing them on;
  * hold long: for a worker's write only (a request carrying the header
            x-amz-meta-fg-vid), with probability --p-long-hold, hold its last
            bytes for up to --long-hold-ms instead: far beyond the margin, the
            store or load balancer that sits on a fully sent request, which
            only a store-side condition can make safe (the "cond" modes of
            jepsen.py).  Election and HEAD requests never get it.

Both are what a slow network or a slow store does to a request that the
gateway has already sent completely.  The design's one timing assumption is
that the upstream commits a request within fencing.commit_margin_ms of its
last byte leaving the gateway; the harness keeps max-delay + max-hold well
below that margin, so RGW's own commit time still fits.  A request the gateway
abandons before its last byte (a cut, a kill -9 in the middle of a body) is
never completed here: the upstream connection is closed with the held bytes
unsent, so RGW discards the partial upload, as S3 does.

Responses are pumped back byte for byte.  Every request is logged (JSONL) with
what was done to it and, for the margin check, the time from the relay
receiving its last byte to RGW's first response byte ("in_to_resp_ms"), an
upper bound of how long the "store" took to commit it counted from the moment
the gateway's last byte arrived here; for a worker's write also its vid
and "t_last", the wall-clock time its last byte went on to RGW (the store
commits it after that).

Request bodies are framed by Content-Length (the gateway always sends one
upstream); a request with Transfer-Encoding makes the relay fall back to a
plain byte pump for the rest of that connection.  Stops on SIGTERM.
"""

import argparse
import json
import os
import random
import signal
import socket
import sys
import threading
import time

HOLD_TAIL = 16  # bytes held back at the end of a body


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def write(self, rec):
        line = json.dumps(rec, separators=(",", ":"))
        with self.lock:
            self.f.write(line + "\n")


class Relay:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.rng_lock = threading.Lock()
        self.log = Log(args.log)
        self.seq = 0
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", args.port))
        self.lsock.listen(128)

    def plan(self, write):
        with self.rng_lock:
            self.seq += 1
            a = self.args
            d = self.rng.uniform(0, a.max_delay_ms) if self.rng.random() < a.p_delay else 0.0
            h = self.rng.uniform(0, a.max_hold_ms) if self.rng.random() < a.p_hold else 0.0
            if write and self.rng.random() < a.p_long_hold:
                h = self.rng.uniform(a.max_hold_ms, a.long_hold_ms)
            return self.seq, d / 1000.0, h / 1000.0

    def serve_forever(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self.conn, args=(c,), daemon=True).start()

    def conn(self, c):
        try:
            up = socket.create_connection(("127.0.0.1", self.args.upstream_port), timeout=10)
            up.settimeout(None)
        except OSError:
            c.close()
            return
        for s in (c, up):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        state = {"pending": None}  # (rec, t_out_last) waiting for the response's first byte
        lock = threading.Lock()
        t = threading.Thread(target=self.pump_responses, args=(up, c, state, lock), daemon=True)
        t.start()
        try:
            self.pump_requests(c, up, state, lock)
        except OSError:
            pass
        finally:
            # Closing upstream without the held bytes: RGW drops a partial body.
            try:
                up.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            up.close()
            t.join(30)
            c.close()

    def pump_responses(self, up, c, state, lock):
        try:
            while True:
                data = up.recv(65536)
                if not data:
                    break
                now = time.monotonic()
                with lock:
                    p = state["pending"]
                    state["pending"] = None
                if p is not None:
                    rec, t_in_last = p
                    rec["in_to_resp_ms"] = round((now - t_in_last) * 1000, 1)
                    rec["status"] = data[9:12].decode("latin-1", "replace")
                    self.log.write(rec)
                try:
                    c.sendall(data)
                except OSError:
                    pass  # the gateway is gone; keep draining so RGW is not blocked
        except OSError:
            pass
        finally:
            try:
                c.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def pump_requests(self, c, up, state, lock):
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                data = c.recv(65536)
                if not data:
                    return
                buf += data
            head, buf = buf.split(b"\r\n\r\n", 1)
            head += b"\r\n\r\n"
            lines = head.split(b"\r\n")
            length = 0
            chunked = False
            vid = None
            for line in lines[1:]:
                k, _, v = line.partition(b":")
                k = k.strip().lower()
                if k == b"content-length":
                    length = int(v.strip())
                elif k == b"transfer-encoding":
                    chunked = True
                elif k == b"x-amz-meta-fg-vid":
                    vid = v.strip().decode("latin-1", "replace")
            seq, delay, hold = self.plan(vid is not None)
            req = lines[0].decode("latin-1", "replace").split(" ")
            rec = {"seq": seq, "method": req[0], "path": req[1] if len(req) > 1 else "",
                   "length": length, "delay_ms": round(delay * 1000, 1),
                   "hold_ms": round(hold * 1000, 1)}
            if vid is not None:
                rec["vid"] = vid
            if chunked:
                rec["passthrough"] = True
                self.log.write(rec)
                up.sendall(head + buf)
                while True:
                    data = c.recv(65536)
                    if not data:
                        return
                    up.sendall(data)
            if length == 0:
                # The head is the whole request: "last byte" = end of head.
                t_in_last = time.monotonic()
                time.sleep(delay + hold)
                rec["t_last"] = time.time()
                with lock:
                    state["pending"] = (rec, t_in_last)
                up.sendall(head)
                continue
            if delay:
                time.sleep(delay)
            up.sendall(head)
            sent = 0
            tail = min(HOLD_TAIL, length) if hold else 0
            while sent < length - tail:
                if not buf:
                    buf = c.recv(65536)
                    if not buf:
                        rec["cut"] = sent
                        self.log.write(rec)
                        return
                n = min(len(buf), length - tail - sent)
                if not tail and sent + n == length:
                    # The last bytes: log from the moment they go (the answer
                    # may come back before sendall returns).
                    rec["t_last"] = time.time()
                    with lock:
                        state["pending"] = (rec, time.monotonic())
                up.sendall(buf[:n])
                buf = buf[n:]
                sent += n
            if tail:
                while len(buf) < tail:
                    data = c.recv(65536)
                    if not data:
                        rec["cut"] = sent
                        self.log.write(rec)
                        return
                    buf += data
                t_in_last = time.monotonic()
                time.sleep(hold)
                rec["t_last"] = time.time()
                with lock:
                    state["pending"] = (rec, t_in_last)
                up.sendall(buf[:tail])
                buf = buf[tail:]



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream-port", type=int, required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--p-delay", type=float, default=0.3)
    ap.add_argument("--max-delay-ms", type=float, default=250)
    ap.add_argument("--p-hold", type=float, default=0.3)
    ap.add_argument("--max-hold-ms", type=float, default=250)
    ap.add_argument("--p-long-hold", type=float, default=0.0)
    ap.add_argument("--long-hold-ms", type=float, default=5000)
    ap.add_argument("--ready-file", help="written with the port once listening")
    args = ap.parse_args()
    r = Relay(args)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if args.ready_file:
        with open(args.ready_file + ".tmp", "w") as f:
            f.write(str(r.lsock.getsockname()[1]))
        os.replace(args.ready_file + ".tmp", args.ready_file)
    r.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
