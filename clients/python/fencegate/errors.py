"""The exceptions of fencegate.

The four fencing refusals subclass botocore's ClientError, so a handler that
catches ClientError (and reads e.response["Error"]["Code"]) keeps working.
"""

from botocore.exceptions import ClientError


class FencegateError(Exception):
    """Base of the library's own errors (not the S3 ones)."""


class GatewayError(FencegateError):
    """The JSON API answered something the library cannot use, or could not
    be reached.  status is the HTTP status (None: no answer), body the
    decoded JSON answer (or {})."""

    def __init__(self, message, status=None, body=None):
        super().__init__(message)
        self.status = status
        self.body = body or {}


class LockHeld(FencegateError):
    """The lock was still held when wait_ms ran out.  holder and token name
    the current holder, as the gateway answered."""

    def __init__(self, lock, holder=None, token=None, expires_in_ms=None):
        super().__init__(f"lock {lock!r} is held by {holder!r} (token {token})")
        self.lock = lock
        self.holder = holder
        self.token = token
        self.expires_in_ms = expires_in_ms


class LeaseLost(FencegateError):
    """The lease is gone (reason: superseded, expired, released or
    unreachable).  Raised by Lease.check(), on entering a lost lease, and by
    an attached S3 client instead of sending a write's first attempt: nothing
    of the call was sent.  (Before a retry it is WriteOutcomeUnknown, unless
    every earlier attempt failed to connect: then it is still LeaseLost.)"""

    def __init__(self, lock, token, reason):
        super().__init__(f"lease on {lock!r} (token {token}) lost: {reason}")
        self.lock = lock
        self.token = token
        self.reason = reason


class WriteOutcomeUnknown(FencegateError):
    """An attached S3 client found the lease lost before a retry: an earlier
    attempt of the same call was sent, and whether it landed is unknown (its
    answer never came, or was an error botocore retries).  The retry is not
    sent.  lock, token and reason are the lost lease's (as in LeaseLost);
    __cause__ is the LeaseLost.  Not a LeaseLost: "nothing was sent" is not
    true of this call; read the object back (or let a newer holder decide)
    before assuming either outcome."""

    def __init__(self, lock, token, reason):
        super().__init__(f"lease on {lock!r} (token {token}) lost ({reason}) before a retry: "
                         "an earlier attempt was sent and its outcome is unknown")
        self.lock = lock
        self.token = token
        self.reason = reason


class FencingError(ClientError):
    """Base of the gateway's fencing refusals (a botocore ClientError).
    lease_reason: what the refusal of a lease's own token says of that lease
    (the reason it is lost with), None when it says nothing."""

    lease_reason = None


class StaleFencingToken(FencingError):
    """409: a newer token has been granted (and used) for the lock."""

    lease_reason = "superseded"


class FencingLeaseExpired(FencingError):
    """409: the token is the newest, but its lease ended."""

    lease_reason = "expired"


class FencingTokenNotGranted(FencingError):
    """409: the token is above every epoch granted."""


class MissingFencingToken(FencingError):
    """428: a fenced write without a token."""


FENCING_ERRORS = {
    cls.__name__: cls
    for cls in (StaleFencingToken, FencingLeaseExpired, FencingTokenNotGranted,
                MissingFencingToken)
}
