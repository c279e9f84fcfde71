"""The JSON API's transport: one short HTTP request per call, SigV4-signed
with botocore's signer when there are credentials, plain otherwise.

Every call takes a timeout that bounds the connect and each socket
operation; callers that guard a lease pass what is left of it.  Nothing here
decides whether a lease is lost: that is the lease's local deadline.
"""

import hashlib
import http.client
import json
import socket
import ssl
from urllib.parse import quote, urlencode, urlsplit

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import BotoCoreError

from .errors import GatewayError

API = "/_fencegate/v1"


class TransportError(GatewayError):
    """No answer: refused, reset, timed out, or not HTTP (status None)."""


class SigningError(TransportError):
    """Nothing sent: the request could not be signed (credentials could not
    be had: a refresh that failed, a metadata service that did not answer).
    Transient like no answer: callers retry it as they retry those."""


def resolve_credentials(credentials):
    """botocore Credentials (or None for plain requests) from what the user
    gave: None (botocore's chain), False (plain), a Credentials object, or a
    dict in boto3's spelling."""
    if credentials is False:
        return None
    if credentials is None:
        import botocore.session
        return botocore.session.get_session().get_credentials()
    if isinstance(credentials, dict):
        try:
            return Credentials(credentials["aws_access_key_id"],
                               credentials["aws_secret_access_key"],
                               credentials.get("aws_session_token"))
        except KeyError as e:
            raise ValueError(f"credentials: {e.args[0]} is required") from None
    if hasattr(credentials, "get_frozen_credentials") or hasattr(credentials, "access_key"):
        return credentials
    raise TypeError("credentials: a botocore Credentials, a dict, None or False")


class Api:
    """The gateway's JSON API at url ("http://host:port", optionally with a
    path prefix).  Thread-safe: it keeps no connection between calls."""

    def __init__(self, url, credentials=None, region="us-east-1", ssl_context=None):
        u = urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"url must be http(s)://host[:port]: {url!r}")
        self.url = url.rstrip("/")
        self._scheme = u.scheme
        self._host = u.hostname
        self._port = u.port or (443 if u.scheme == "https" else 80)
        self._prefix = u.path.rstrip("/")
        self._creds = resolve_credentials(credentials)
        self._region = region
        self._ssl = ssl_context

    @property
    def signed(self):
        return self._creds is not None

    def _sign(self, method, url, body, headers):
        """The headers, signed.  Raises SigningError (a TransportError) when
        the credentials cannot be had or used: botocore's refresh raises
        what its provider raised (CredentialRetrievalError, a timeout of the
        metadata service, ...), and a caller-supplied credentials object may
        raise anything; none of it is a judgment on a lease."""
        creds = self._creds
        try:
            if hasattr(creds, "get_frozen_credentials"):
                f = creds.get_frozen_credentials()  # refreshes when near expiry
                creds = Credentials(f.access_key, f.secret_key, f.token)
        except Exception as e:  # noqa: BLE001 - whatever the provider raised
            raise SigningError(f"{method} {url}: credentials unavailable: {e!r}") from e
        req = AWSRequest(method=method, url=url, data=body, headers=headers)
        # The body's own hash: the gateway checks it as it reads.
        req.headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
        try:
            S3SigV4Auth(creds, "s3", self._region).add_auth(req)
        except BotoCoreError as e:  # NoCredentialsError: no key after a refresh
            raise SigningError(f"{method} {url}: cannot sign: {e!r}") from e
        return {k: v for k, v in req.headers.items()}

    def call(self, method, path, body=None, query=None, timeout=10.0):
        """One request; returns (status, decoded JSON or {}).  Raises
        TransportError when no HTTP answer came within timeout seconds, and
        SigningError (a TransportError) when it could not be signed."""
        target = self._prefix + API + path
        if query:
            target += "?" + urlencode(sorted(query.items()))
        data = b"" if body is None else json.dumps(body).encode()
        headers = {"Host": self._host_header()}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._creds is not None:
            headers = self._sign(method, f"{self._scheme}://{self._host_header()}{target}",
                                 data, headers)
        timeout = max(0.01, timeout)
        if self._scheme == "https":
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=self._ssl or ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        try:
            headers.pop("Host", None)
            conn.putrequest(method, target, skip_host=False, skip_accept_encoding=True)
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.putheader("Content-Length", str(len(data)))
            conn.putheader("Connection", "close")
            conn.endheaders(data)
            resp = conn.getresponse()
            raw = resp.read()
            status = resp.status
        except (OSError, http.client.HTTPException, socket.timeout) as e:
            raise TransportError(f"{method} {target}: {e!r}") from e
        finally:
            conn.close()
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            doc = {"error": "not_json", "message": raw[:200].decode(errors="replace")}
        if not isinstance(doc, dict):
            doc = {"value": doc}
        return status, doc

    def _host_header(self):
        default = 443 if self._scheme == "https" else 80
        host = f"[{self._host}]" if ":" in self._host else self._host
        return host if self._port == default else f"{host}:{self._port}"


def lock_path(lock, verb=""):
    return "/locks/" + quote(lock, safe="") + (f"/{verb}" if verb else "")
