"""A lease on one lock: its renewals, its local deadline, its loss.

Four things decide when the lease is lost, and none of them waits on the
network:

* the local deadline, on the boot-time clock (now()): the send time of the last
  confirmed acquire or renewal plus lease_ms.  The gateway started that lease
  no earlier than the request was sent, so the gateway's own expiry is never
  before it.  A watchdog thread sleeps until the deadline and declares the
  loss there, whatever the renewal thread is doing (it may be stuck in a
  socket); check() and the S3 hooks also compare the clock themselves, so a
  process that wakes from a pause sees the loss before its next write;
* a refused renewal (409 superseded, 403, 404): lost at once;
* a write of an attached client refused by the fence with this lease's lock
  and token (StaleFencingToken: "superseded", FencingLeaseExpired:
  "expired", unless the deadline has passed, judged first): lost before the
  write's error is raised;
* release().

The reason says which: "superseded" (a newer token was granted), "expired"
(the deadline passed, or the gateway says the lease ended), "unreachable"
(the deadline passed while renewals got no answer: failed, or still
waiting when the deadline was judged on time), "released".  A process that
judges its deadline more than PAUSE_S late was not running (a pause): its
lease "expired".  A lease
that is lost stays lost.
"""

import threading
import time

from ._api import TransportError, lock_path
from .errors import LeaseLost

SUPERSEDED = "superseded"
EXPIRED = "expired"
RELEASED = "released"
UNREACHABLE = "unreachable"

RELEASE_BUDGET_S = 1.0  # release() never takes longer than this
PAUSE_S = 0.25          # a deadline judged later than this: the process was not running

_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


def now():
    """Seconds on the clock leases are judged on: Linux's boot-time clock,
    which is monotonic and, unlike time.monotonic(), keeps counting while the
    machine is suspended, so a worker resumed from a host suspend finds its
    lease lost before its next write; time.monotonic() where there is none."""
    return time.clock_gettime(_BOOTTIME) if _BOOTTIME is not None else time.monotonic()


class Lease:
    """A granted lease; made by Gateway.lease(), which acquires it.

    Attributes: lock, token, lease_ms, holder, lost (threading.Event),
    reason (None while held).  A context manager: entering a lost lease
    raises LeaseLost; leaving releases it.
    """

    def __init__(self, api, lock, holder, grant, sent_at, clock=now):
        self._api = api
        self._clock = clock
        self.lock = lock
        self.holder = holder
        self.token = int(grant["token"])
        self.lease_ms = int(grant["lease_ms"])
        self._lease_id = grant["lease_id"]
        self.lost = threading.Event()
        self.reason = None
        self._cv = threading.Condition()
        self._deadline = sent_at + self.lease_ms / 1000.0
        self._confirmed_at = sent_at  # send time of the last confirmed grant or renewal
        self._failing = False         # a renewal since then got no usable answer
        self._inflight = False        # a renewal is waiting for its answer
        self._callbacks = []
        self._attached = []           # _Slot objects this lease is attached to
        self.renewals = 0
        self._renewer = threading.Thread(target=self._renew_loop, daemon=True,
                                         name=f"fencegate-renew-{lock}")
        self._watchdog = threading.Thread(target=self._watch_loop, daemon=True,
                                          name=f"fencegate-deadline-{lock}")

    def _start(self):
        self._watchdog.start()
        self._renewer.start()
        return self

    # ---- what users read ----

    def remaining(self):
        """Seconds left until the local deadline (0 once lost)."""
        with self._cv:
            if self.lost.is_set():
                return 0.0
            return max(0.0, self._deadline - self._clock())

    def check(self):
        """Raises LeaseLost if the lease is lost or its deadline has passed
        (judged here, on the clock, not only by the watchdog)."""
        if not self.lost.is_set():
            self._judge()
        if self.lost.is_set():
            raise LeaseLost(self.lock, self.token, self.reason)

    def on_lost(self, callback):
        """Calls callback(lease) once, when the lease is lost (at once, in
        this thread, if it already is).  Callbacks run in the thread that
        noticed the loss, after lost is set: keep them short."""
        with self._cv:
            if not self.lost.is_set():
                self._callbacks.append(callback)
                return
        self._run_callback(callback)

    def release(self):
        """Gives the lease back: lost at once (reason "released" unless it
        was already lost), then a best-effort release call bounded at one
        second.  Nothing is sent if the lease was already lost."""
        was_held = self._lose(RELEASED)
        for slot in list(self._attached):
            slot.detach(self)
        if not was_held:
            return
        body = {"token": self.token, "lease_id": self._lease_id}

        def send():
            try:
                self._api.call("POST", lock_path(self.lock, "release"), body,
                               timeout=RELEASE_BUDGET_S)
            except Exception:  # noqa: BLE001 - best effort: the lease ends anyway
                pass

        t = threading.Thread(target=send, daemon=True, name=f"fencegate-release-{self.lock}")
        t.start()
        t.join(RELEASE_BUDGET_S)

    def attach(self, s3_client):
        """Every write of s3_client carries this lease's lock and token (see
        fencegate.s3hooks); the newest attach on a client wins.  Returns a
        handle whose detach() (or leaving it as a context manager) restores
        the client."""
        from .s3hooks import attach
        return attach(s3_client, self)

    def __enter__(self):
        self.check()
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def __repr__(self):
        state = f"lost: {self.reason}" if self.lost.is_set() else f"{self.remaining():.1f}s left"
        return f"<Lease {self.lock} token={self.token} {state}>"

    # ---- loss ----

    def _judge(self):
        """Declares the loss if the deadline has passed.  Returns True if lost."""
        with self._cv:
            if self.lost.is_set():
                return True
            now = self._clock()
            if now < self._deadline:
                return False
            # unreachable: renewals failed, or one was still unanswered when
            # the deadline came (judged on time: a process judging long
            # after its deadline was paused, and its lease expired)
            on_time = now - self._deadline < PAUSE_S
            unreachable = self._failing or (self._inflight and on_time)
        self._lose(UNREACHABLE if unreachable else EXPIRED)
        return True

    def _refused(self, error, reason):
        """A write refused by the fence (error: the S3 error document's
        fields; reason: its class's lease_reason, None when the refusal says
        nothing of a lease).  When it names this lease's lock and token, the
        gateway has judged the lease: lost now with reason.  A deadline
        already passed is judged first, so a process waking from a pause
        reads "expired", as it would have a moment later."""
        if reason is None or error.get("Lock") != self.lock or \
                error.get("Token") != str(self.token):
            return
        if not self._judge():
            self._lose(reason)

    def _lose(self, reason):
        """Marks the lease lost with reason unless it already is; runs the
        callbacks.  Returns True if this call made it lost."""
        with self._cv:
            if self.lost.is_set():
                return False
            self.reason = reason
            self.lost.set()
            callbacks, self._callbacks = self._callbacks, []
            self._cv.notify_all()
        for cb in callbacks:
            self._run_callback(cb)
        return True

    def _run_callback(self, cb):
        try:
            cb(self)
        except Exception:  # noqa: BLE001 - one callback must not stop the others
            import traceback
            traceback.print_exc()

    def _watch_loop(self):
        with self._cv:
            while not self.lost.is_set():
                left = self._deadline - self._clock()
                if left <= 0:
                    break
                self._cv.wait(left)
        self._judge()

    # ---- renewal ----

    def _confirm(self, timeout):
        """One renewal before the threads start (Gateway.lease after a
        wait); True if confirmed, the deadline then counting from its send."""
        sent = self._clock()
        try:
            status, _ = self._api.call("POST", lock_path(self.lock, "renew"),
                                       {"token": self.token, "lease_id": self._lease_id},
                                       timeout=min(timeout, self.lease_ms / 1000.0))
        except TransportError:
            return False
        if status != 200:
            return False
        with self._cv:
            self._confirmed_at = sent
            self._deadline = sent + self.lease_ms / 1000.0
        return True

    def _renew_loop(self):
        third = self.lease_ms / 3000.0
        backoff = min(0.1, third / 4)
        while True:
            with self._cv:
                while not self.lost.is_set():
                    if self._failing:
                        due = self._last_try + backoff
                    else:
                        due = self._confirmed_at + third
                    left = due - self._clock()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                if self.lost.is_set():
                    return
            if self._judge():
                return
            self._renew_once(third)

    _last_try = 0.0

    def _renew_once(self, third):
        sent = self._clock()
        self._last_try = sent
        with self._cv:
            left = self._deadline - sent
        timeout = max(0.05, min(left, third))
        self._inflight = True
        try:
            status, doc = self._api.call(
                "POST", lock_path(self.lock, "renew"),
                {"token": self.token, "lease_id": self._lease_id}, timeout=timeout)
        except TransportError:  # no answer, or not signed (credentials unavailable)
            self._failing = True
            return
        finally:
            self._inflight = False
        if self._judge():
            return  # an answer after the deadline changes nothing
        if status == 200:
            with self._cv:
                if not self.lost.is_set():
                    self._confirmed_at = sent
                    self._deadline = sent + self.lease_ms / 1000.0
                    self._failing = False
                    self.renewals += 1
                    self._cv.notify_all()
            return
        reason = refusal_reason(status, doc, self.token)
        if reason is None:
            self._failing = True  # 5xx, auth trouble, ...: try again until the deadline
            return
        self._lose(reason)


def refusal_reason(status, doc, token):
    """The loss reason for a renewal the gateway refused, or None when the
    answer is not a judgment on the lease (unavailable, timeouts, auth)."""
    err = doc.get("error")
    if status == 409 and err == "superseded":
        other = doc.get("token")
        if isinstance(other, int) and other > token:
            return SUPERSEDED
        return EXPIRED
    if (status, err) in ((404, "not_found"), (403, "denied")):
        return EXPIRED  # no such epoch, or not ours: the gateway holds no lease of ours
    return None
