"""fencegate: leases, renewals, loss and fencing tokens for workers writing
through a fencegate gateway.

    gw = fencegate.Gateway("http://127.0.0.1:9000")
    with gw.lease("orders", lease_ms=15000) as lease:
        lease.attach(s3)          # every write carries the lock and token
        while not lease.lost.is_set():
            s3.put_object(...)    # LeaseLost once the lease is gone
"""

from .errors import (FencegateError, FencingError, FencingLeaseExpired, FencingTokenNotGranted,
                     GatewayError, LeaseLost, LockHeld, MissingFencingToken, StaleFencingToken,
                     WriteOutcomeUnknown)
from .gateway import Election, Gateway
from .lease import EXPIRED, RELEASED, SUPERSEDED, UNREACHABLE, Lease
from .s3hooks import detach

__version__ = "0.1.0"

__all__ = [
    "Gateway", "Lease", "Election", "detach",
    "FencegateError", "GatewayError", "LockHeld", "LeaseLost", "WriteOutcomeUnknown",
    "FencingError", "StaleFencingToken", "FencingLeaseExpired", "FencingTokenNotGranted",
    "MissingFencingToken",
    "SUPERSEDED", "EXPIRED", "RELEASED", "UNREACHABLE",
]
