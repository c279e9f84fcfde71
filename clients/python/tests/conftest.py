"""A tiny fake of the gateway for unit-level behaviour (deadlines, refusals,
hooks): a threaded HTTP server whose answers each test scripts.  The
integration tests (tests/integration/test_worker_python.py) use the real
gateway and RGW."""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

try:  # the installed package (make py-client runs these against its venv) ...
    import fencegate
except ImportError:  # ... or, run from a checkout without an install, the source
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import fencegate
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")


def pytest_report_header(config):
    import botocore
    return f"fencegate from {os.path.dirname(fencegate.__file__)}, botocore {botocore.__version__}"


class Fake:
    """routes: {(method, path_suffix): fn(req) -> (status, body_dict|bytes[, headers])};
    fn may sleep (a hung gateway).  requests: [(method, path, headers, body)]."""

    def __init__(self):
        self.routes = {}
        self.requests = []
        self.token = 0
        self.hang = threading.Event()  # set: every call hangs until released
        fake = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _do(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                path = self.path.split("?", 1)[0]
                fake.requests.append((self.command, self.path, dict(self.headers), body))
                if fake.hang.is_set():
                    while fake.hang.is_set():
                        time.sleep(0.02)
                fn = None
                for (m, suffix), f in fake.routes.items():
                    if m == self.command and path.endswith(suffix):
                        fn = f
                        break
                if fn is None:
                    out = (404, {"error": "not_found"})
                else:
                    out = fn(self, body)
                status, payload = out[0], out[1]
                headers = out[2] if len(out) > 2 else {}
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = _do

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def grant(self, lease_ms=600):
        def acquire(req, body):
            self.token += 1
            return 200, {"lock": "l", "token": self.token, "lease_ms": lease_ms,
                         "lease_id": "ab" * 32, "holder": json.loads(body)["holder"],
                         "live": True}
        self.routes[("POST", "/acquire")] = acquire
        self.routes[("POST", "/renew")] = lambda r, b: (200, {"token": self.token, "live": True})
        self.routes[("POST", "/release")] = lambda r, b: (200, {"token": self.token})

    def calls(self, suffix):
        return [r for r in self.requests if r[1].split("?")[0].endswith(suffix)]

    def close(self):
        self.hang.clear()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    f = Fake()
    yield f
    f.close()
