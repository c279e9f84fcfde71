"""botocore event hooks that fence an S3 client's writes with a lease.

One set of handlers per client, registered once (by unique_id), reading the
client's slot: the lease attached last.  Attaching another lease replaces the
slot's lease, so the hooks of an older lease never act again; detaching
empties it, and the client is then as it was (reads and writes pass
untouched).

* before-sign: on a write, check the lease on the local clock (LeaseLost,
  nothing sent), then add X-Fencing-Lock, and X-Fencing-Token on every write
  but the parts of a multipart upload: UploadPart, UploadPartCopy,
  CompleteMultipartUpload and AbortMultipartUpload carry the lock only and
  are claimed by the gateway with the epoch that created the upload (README,
  "Writing through fencegate", its multipart rule).  before-sign runs for every attempt, so a retry
  after the deadline is refused too, but as WriteOutcomeUnknown (with the
  LeaseLost as its cause), not LeaseLost: an earlier attempt of that call
  was sent, and nobody knows whether it landed.  An attempt is a retry when
  an earlier attempt of the call may have been sent: this hook let one
  through and its outcome was anything but a failure to connect (a mark in
  the request context, which lives as long as the call).  An attempt whose
  connection was never made (refused, unreachable, a connect timeout, a
  name not resolved: botocore's EndpointConnectionError and
  ConnectTimeoutError) sent nothing, so a loss found after only such
  attempts is still LeaseLost.  Where needs-retry never said how an attempt
  ended, botocore's own count (context["retries"]["attempt"] past the
  first) or the hook's pass mark counts it as sent.
* needs-retry (registered first): a fencing refusal (409/428 with one of the
  four codes) is raised there as its typed error, so no retry handler, in
  whatever mode or with however many attempts, can send it again.  A refusal
  that names the attached lease's lock and token (StaleFencingToken,
  FencingLeaseExpired) is the gateway's judgment on that lease: the lease is
  lost, and its on_lost callbacks have run, before the error is raised.
"""

import threading
import weakref

from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError

from .errors import FENCING_ERRORS, LeaseLost, WriteOutcomeUnknown

# Writes that carry the token (botocore operation names).
TOKEN_OPS = frozenset({
    "PutObject", "CopyObject", "DeleteObject", "DeleteObjects", "CreateMultipartUpload",
    "PutObjectTagging", "DeleteObjectTagging", "PutObjectAcl", "PutObjectRetention",
    "PutObjectLegalHold", "RestoreObject",
})
# Writes into an upload: the lock only (the upload's epoch decides).
PART_OPS = frozenset({
    "UploadPart", "UploadPartCopy", "CompleteMultipartUpload", "AbortMultipartUpload",
})

_UNIQUE = "fencegate-lease-hooks"
_PASSED = "fencegate_attempt_passed"  # request context: an attempt went on, its end not yet seen
_SENT = "fencegate_attempt_sent"      # request context: an attempt may have been sent
_JUDGED = "fencegate_attempts_judged"  # request context: needs-retry saw how each ended
_slots = weakref.WeakKeyDictionary()  # client -> _Slot
_slots_lock = threading.Lock()


class _Slot:
    """The lease a client's hooks use now (None: pass everything through)."""

    def __init__(self):
        self.lease = None
        self._lock = threading.Lock()

    def set(self, lease):
        with self._lock:
            old, self.lease = self.lease, lease
        if old is not None and old is not lease:
            _forget(old, self)
        if self not in lease._attached:
            lease._attached.append(self)

    def detach(self, lease):
        with self._lock:
            if self.lease is lease:
                self.lease = None
        _forget(lease, self)

    # before-sign.s3
    def before_sign(self, request, operation_name=None, **kwargs):
        context = getattr(request, "context", None)
        if context is None:
            context = {}
        if context.get("is_presign_request"):
            return
        lease = self.lease
        if lease is not None and operation_name in TOKEN_OPS:
            _check(lease, context)
            request.headers["X-Fencing-Lock"] = lease.lock
            request.headers["X-Fencing-Token"] = str(lease.token)
        elif lease is not None and operation_name in PART_OPS:
            _check(lease, context)
            request.headers["X-Fencing-Lock"] = lease.lock
            if "X-Fencing-Token" in request.headers:
                del request.headers["X-Fencing-Token"]
        # Marked whatever the lease (none attached, or a write not fenced):
        # if this attempt fails and is retried under a lease found lost,
        # the call's outcome is still unknown.
        context[_PASSED] = True

    # needs-retry.s3: runs after every attempt, first of its handlers.
    def needs_retry(self, response=None, operation=None, caught_exception=None,
                    request_dict=None, **kwargs):
        context = (request_dict or {}).get("context")
        if isinstance(context, dict) and context.get(_PASSED):
            context[_PASSED] = False
            context[_JUDGED] = True
            if response is not None or not _never_connected(caught_exception):
                context[_SENT] = True
        if response is None:
            return None
        http, parsed = response
        error = (parsed or {}).get("Error", {})
        cls = FENCING_ERRORS.get(error.get("Code"))
        if cls is not None and getattr(http, "status_code", 0) in (409, 428):
            lease = self.lease
            if lease is not None:
                lease._refused(error, cls.lease_reason)  # lost before the caller sees it
            raise cls(parsed, getattr(operation, "name", "unknown"))
        return None


def _never_connected(exc):
    """True for an attempt's error that means no byte of it left: the
    connection was never made.  Anything else after the hook let it through
    (a reset, a read timeout, an answer) may have been sent."""
    return isinstance(exc, (EndpointConnectionError, ConnectTimeoutError))


def _maybe_sent(context):
    if context.get(_SENT) or context.get(_PASSED):
        return True
    if context.get(_JUDGED):
        return False  # every earlier attempt failed to connect
    retries = context.get("retries")
    attempt = retries.get("attempt", 1) if isinstance(retries, dict) else 1
    return isinstance(attempt, int) and attempt > 1


def _check(lease, context):
    """lease.check() before an attempt: LeaseLost when nothing of the call
    was sent (its first attempt, or a retry after attempts that never
    connected), WriteOutcomeUnknown on a retry after one that may have been."""
    try:
        lease.check()
    except LeaseLost as e:
        if _maybe_sent(context):
            raise WriteOutcomeUnknown(e.lock, e.token, e.reason) from e
        raise


def _forget(lease, slot):
    try:
        lease._attached.remove(slot)
    except ValueError:
        pass


class Attachment:
    """What Lease.attach returns: detach() (also on leaving a with block)."""

    def __init__(self, client, slot, lease):
        self.client = client
        self._slot = slot
        self._lease = lease

    def detach(self):
        self._slot.detach(self._lease)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
        return False


def attach(client, lease):
    with _slots_lock:
        slot = _slots.get(client)
        if slot is None:
            slot = _Slot()
            _slots[client] = slot
            events = client.meta.events
            events.register("before-sign.s3", slot.before_sign, unique_id=_UNIQUE + "-sign")
            events.register_first("needs-retry.s3", slot.needs_retry,
                                  unique_id=_UNIQUE + "-retry")
    slot.set(lease)
    return Attachment(client, slot, lease)


def detach(client):
    """Empties client's slot, whatever lease is attached."""
    slot = _slots.get(client)
    if slot is not None and slot.lease is not None:
        slot.detach(slot.lease)
