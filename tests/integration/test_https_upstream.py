"""The gateway against an https upstream: relay.py's relay with TLS (Python's
ssl, a certificate from a CA made in a temp dir) in front of RGW, upstream.ca_file
naming that CA.  PUTs and GETs of small, 5 MiB and 40 MiB objects, a HEAD and a
listing go through, with each upstream client (upstream.client lean and curl;
the internal S3 client is libcurl either way).  With the system's CAs instead
of the test CA the gateway refuses the upstream: nothing reaches RGW."""

import os
import ssl
import subprocess

import pytest

from conftest import unique_bucket_name  # noqa: F401 - the rgw/bucket fixtures come from there
from relay import DelayRelay


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


@pytest.fixture
def tls_relay(rgw, tmp_path):
    try:
        ca, cert, key = _make_certs(tmp_path)
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("no openssl command")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    relay = DelayRelay(int(rgw.endpoint.rsplit(":", 1)[1]), tls=ctx)
    yield relay, ca
    relay.close()


@pytest.mark.parametrize("client", ["lean", "curl"])
def test_put_get_through_https_upstream(gateway, rgw, bucket, tls_relay, client):
    relay, ca = tls_relay
    gw = gateway({"upstream": {"endpoint": f"https://localhost:{relay.port}",
                               "ca_file": str(ca), "client": client}})
    c = gw.client()
    # "large": past every buffer and window on the way (send window 256 KiB,
    # limits.buffer_bytes, the relay's sockets), so TLS writes meet back-pressure
    bodies = {"small": b"hello over tls", "big": os.urandom(5 * 1024 * 1024 + 7),
              "large": os.urandom(40 * 1024 * 1024 + 3)}
    for key, body in bodies.items():
        c.put_object(Bucket=bucket, Key=f"tls/{key}", Body=body)
        assert rgw.client().get_object(Bucket=bucket, Key=f"tls/{key}")["Body"].read() == body
        assert c.get_object(Bucket=bucket, Key=f"tls/{key}")["Body"].read() == body
        assert c.head_object(Bucket=bucket, Key=f"tls/{key}")["ContentLength"] == len(body)
    listed = c.list_objects_v2(Bucket=bucket, Prefix="tls/")
    assert sorted(o["Key"] for o in listed["Contents"]) == ["tls/big", "tls/large", "tls/small"]
    assert relay.handshakes >= 1
    # connections are reused: far fewer handshakes than the 11 requests above
    assert relay.handshakes < 8


@pytest.mark.parametrize("client", ["lean", "curl"])
def test_untrusted_https_upstream_refused(gateway, rgw, bucket, tls_relay, client):
    relay, _ = tls_relay
    gw = gateway({"upstream": {"endpoint": f"https://localhost:{relay.port}", "client": client}})
    c = gw.client()
    with pytest.raises(Exception):
        c.put_object(Bucket=bucket, Key="tls/refused", Body=b"x")
    assert relay.handshakes == 0
    assert relay.requests == []
    listed = rgw.client().list_objects_v2(Bucket=bucket, Prefix="tls/")
    assert "Contents" not in listed
