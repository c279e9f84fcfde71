"""The gateway against an https upstream: a TLS relay (Python's ssl, a
certificate from a CA made in a temp dir) in front of RGW, upstream.ca_file
naming that CA.  PUTs and GETs of small and multi-MiB objects, a HEAD and a
listing go through, with each upstream client (upstream.client lean and curl;
the internal S3 client is libcurl either way).  With the system's CAs instead
of the test CA the gateway refuses the upstream: nothing reaches RGW."""

import os
import socket
import ssl
import subprocess
import threading

import pytest

from conftest import unique_bucket_name  # noqa: F401 - the rgw/bucket fixtures come from there


def _make_certs(d):
    def run(cmd):
        subprocess.run(cmd, shell=True, check=True, cwd=d, capture_output=True)

    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-keyout ca.key -out ca.pem -days 2 -subj /CN=fencegate-test-ca")
    (d / "srv.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-keyout srv.key -out srv.csr -subj /CN=localhost")
    run("openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-days 2 -extfile srv.ext -out srv.pem")
    return d / "ca.pem", d / "srv.pem", d / "srv.key"


class TlsRelay:
    """Accepts TLS on 127.0.0.1 and pipes the plain bytes to RGW, both ways."""

    def __init__(self, upstream_port, cert, key):
        self.upstream_port = upstream_port
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.accepted = 0
        self.handshakes = 0
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        self.lsock.settimeout(0.2)
        while not self.stop:
            try:
                c, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _serve(self, raw):
        try:
            tls = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        self.handshakes += 1
        up = socket.create_connection(("127.0.0.1", self.upstream_port))
        t = threading.Thread(target=self._pipe, args=(up, tls), daemon=True)
        t.start()
        self._pipe(tls, up)
        t.join(timeout=30)
        tls.close()
        up.close()

    def close(self):
        self.stop = True
        self.lsock.close()


@pytest.fixture
def tls_relay(rgw, tmp_path):
    try:
        ca, cert, key = _make_certs(tmp_path)
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("no openssl command")
    relay = TlsRelay(int(rgw.endpoint.rsplit(":", 1)[1]), str(cert), str(key))
    yield relay, ca
    relay.close()


@pytest.mark.parametrize("client", ["lean", "curl"])
def test_put_get_through_https_upstream(gateway, rgw, bucket, tls_relay, client):
    relay, ca = tls_relay
    gw = gateway({"upstream": {"endpoint": f"https://localhost:{relay.port}",
                               "ca_file": str(ca), "client": client}})
    c = gw.client()
    bodies = {"small": b"hello over tls", "big": os.urandom(5 * 1024 * 1024 + 7)}
    for key, body in bodies.items():
        c.put_object(Bucket=bucket, Key=f"tls/{key}", Body=body)
        assert rgw.client().get_object(Bucket=bucket, Key=f"tls/{key}")["Body"].read() == body
        assert c.get_object(Bucket=bucket, Key=f"tls/{key}")["Body"].read() == body
        assert c.head_object(Bucket=bucket, Key=f"tls/{key}")["ContentLength"] == len(body)
    listed = c.list_objects_v2(Bucket=bucket, Prefix="tls/")
    assert sorted(o["Key"] for o in listed["Contents"]) == ["tls/big", "tls/small"]
    assert relay.handshakes >= 1
    # connections are reused: far fewer handshakes than the 8 requests above
    assert relay.handshakes < 8


def test_untrusted_https_upstream_refused(gateway, rgw, bucket, tls_relay):
    relay, _ = tls_relay
    gw = gateway({"upstream": {"endpoint": f"https://localhost:{relay.port}"}})
    c = gw.client()
    with pytest.raises(Exception):
        c.put_object(Bucket=bucket, Key="tls/refused", Body=b"x")
    assert relay.handshakes == 0
    listed = rgw.client().list_objects_v2(Bucket=bucket, Prefix="tls/")
    assert "Contents" not in listed
