"""Gateway: the JSON API client, leases, elections and watches."""

import os
import socket
import threading
import time

from ._api import Api, TransportError, lock_path
from .errors import GatewayError, LockHeld
from .lease import Lease, now

POLL_S = 2.0        # longest single server-side wait (stop() answers within this)
WATCH_WAIT_MS = 30000


def default_holder():
    return f"{socket.gethostname()}:{os.getpid()}"


class Gateway:
    """fencegate's JSON API at url.

    credentials: None for botocore's credential chain (environment, shared
    files, instance roles; plain requests if it finds nothing), a botocore
    Credentials object, a dict in boto3's spelling (aws_access_key_id,
    aws_secret_access_key, optional aws_session_token), or False for plain
    requests.  Requests are signed with SigV4 for service "s3" in region.
    """

    def __init__(self, url, credentials=None, region="us-east-1", timeout=10.0):
        self._api = Api(url, credentials, region)
        self.url = self._api.url
        self.timeout = timeout

    # ---- leases ----

    def lease(self, lock, holder=None, lease_ms=None, wait_ms=None):
        """Acquires lock and returns its Lease, renewed in the background.

        wait_ms: how long to wait for a held lock (None: as long as it
        takes; 0: not at all); past it, LockHeld.  Raises GatewayError for
        any other refusal, and one with status None when the gateway cannot
        be reached or the request cannot be signed (credentials unavailable).
        """
        holder = holder or default_holder()
        give_up = None if wait_ms is None else now() + wait_ms / 1000.0
        while True:
            left_ms = POLL_S * 1000 if give_up is None else max(0, (give_up - now()) * 1000)
            lease = self._try_acquire(lock, holder, lease_ms, int(min(left_ms, POLL_S * 1000)))
            if isinstance(lease, Lease):
                return lease
            if give_up is not None and now() >= give_up:
                raise lease

    def _try_acquire(self, lock, holder, lease_ms, wait_ms):
        """A Lease, or the LockHeld to raise if the wait ran out."""
        body = {"holder": holder, "wait_ms": wait_ms}
        if lease_ms is not None:
            body["lease_ms"] = int(lease_ms)
        sent = now()
        try:
            status, doc = self._api.call("POST", lock_path(lock, "acquire"), body,
                                         timeout=self.timeout + wait_ms / 1000.0)
        except TransportError:
            raise
        if status == 200:
            lease = Lease(self._api, lock, holder, doc, sent)
            # A grant after a wait was made late in the request: a deadline
            # counted from its send may be short or past.  Renew at once,
            # before anyone sees the lease: the deadline then counts from
            # the renewal's send.
            # A confirmation that fails, whichever way (refused, no answer,
            # not signed, anything raised), gives the grant back (best
            # effort) before the error propagates.
            if lease._deadline - now() < lease.lease_ms / 1000.0 * 2 / 3:
                try:
                    confirmed = lease._confirm(self.timeout)
                except BaseException:
                    lease.release()
                    raise
                if not confirmed:
                    lease.release()
                    raise GatewayError(f"acquire {lock}: granted, but the renewal that "
                                       "confirms it failed")
            return lease._start()
        if status == 409 and doc.get("error") == "held":
            return LockHeld(lock, doc.get("holder"), doc.get("token"), doc.get("expires_in_ms"))
        raise GatewayError(f"acquire {lock}: HTTP {status} {doc.get('error')}: "
                           f"{doc.get('message', '')}", status, doc)

    def get(self, lock, wait_ms=None, after=None, timeout=None):
        """The lock's public record (GET /locks/{lock}), as a dict."""
        q = {}
        if wait_ms is not None:
            q["wait_ms"] = int(wait_ms)
        if after is not None:
            q["after"] = int(after)
        t = timeout if timeout is not None else self.timeout + (wait_ms or 0) / 1000.0
        status, doc = self._api.call("GET", lock_path(lock), query=q or None, timeout=t)
        if status != 200:
            raise GatewayError(f"get {lock}: HTTP {status} {doc.get('error')}", status, doc)
        return doc

    def watch(self, lock, stop=None, wait_ms=WATCH_WAIT_MS):
        """Yields the lock's record (a dict: holder, token, live, ...) now and
        at every change of holder, token or liveness, on the API's long poll.
        Ends when stop (a threading.Event) is set; transport errors are
        retried after a short pause."""
        last = None
        while stop is None or not stop.is_set():
            try:
                if last is None or not last.get("live"):
                    # The long poll wakes on "a newer epoch, or this one
                    # ended": with no live lease there is nothing to wait on.
                    if last is not None:
                        _sleep(stop, 0.2)
                    doc = self.get(lock)
                else:
                    doc = self.get(lock, wait_ms=wait_ms, after=last["token"])
            except (TransportError, GatewayError):
                _sleep(stop, 0.5)
                continue
            key = (doc.get("token"), doc.get("holder"), doc.get("live"))
            if last is None or key != (last.get("token"), last.get("holder"), last.get("live")):
                yield doc
            last = doc

    # ---- elections ----

    def elect(self, lock, run, holder=None, lease_ms=None, on_started=None, on_stopped=None,
              on_new_leader=None, stop=None, block=True):
        """Campaigns for lock; while leading calls run(lease) (lease.lost is
        its cancellation), then campaigns again when run returns or the
        lease is lost.  on_started(lease) before run, on_stopped() after
        leading ends (only ever after an on_started), on_new_leader(holder)
        when the holder seen changes (ours included).

        block=True runs in this thread until stop (a threading.Event) is set
        (or KeyboardInterrupt) and returns the Election; block=False starts
        a thread and returns the Election at once: election.stop() ends it.
        An exception from run or a callback ends the election (the lease
        released first): raised in the blocking form, kept in
        election.error in the threaded one.  So does a campaign the gateway
        refuses outright (a GatewayError with a 4xx status other than 429,
        such as 403 denied: the principal may not hold the lock); an
        unreachable or unready gateway is asked again.
        """
        e = Election(self, lock, run, holder or default_holder(), lease_ms, on_started,
                     on_stopped, on_new_leader, stop)
        if block:
            e.run_forever()
        else:
            e.start()
        return e


def _transient(e):
    """True for a GatewayError worth asking again: no answer, 429 or 5xx (as
    the JS and Go libraries judge it)."""
    return e.status is None or e.status == 0 or e.status == 429 or e.status >= 500


def _sleep(stop, s):
    if stop is None:
        time.sleep(s)
    else:
        stop.wait(s)


class Election:
    """One campaign (Gateway.elect).  Attributes: lock, holder, lease (the
    current one while leading, else None), leader (the holder last seen)."""

    def __init__(self, gw, lock, run, holder, lease_ms, on_started, on_stopped, on_new_leader,
                 stop):
        self.gw = gw
        self.lock = lock
        self.holder = holder
        self.lease_ms = lease_ms
        self._run = run
        self._on_started = on_started
        self._on_stopped = on_stopped
        self._on_new_leader = on_new_leader
        self._stop = stop or threading.Event()
        self.lease = None
        self.leader = None
        self.error = None  # what run or a callback raised (it ends the election)
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._thread_main, daemon=True,
                                        name=f"fencegate-elect-{self.lock}")
        self._thread.start()
        return self

    def stop(self, timeout=None):
        """Stops campaigning; releases the lease if leading (so run sees
        lease.lost) and, in the threaded form, waits for the thread."""
        self._stop.set()
        lease = self.lease
        if lease is not None:
            lease.release()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _thread_main(self):
        try:
            self.run_forever()
        except Exception:  # noqa: BLE001 - kept in self.error, printed
            import traceback
            traceback.print_exc()

    def join(self, timeout=None):
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def is_leader(self):
        lease = self.lease
        return lease is not None and not lease.lost.is_set()

    def _saw(self, holder):
        if holder is not None and holder != self.leader:
            self.leader = holder
            if self._on_new_leader is not None:
                self._on_new_leader(holder)

    def run_forever(self):
        try:
            while not self._stop.is_set():
                try:
                    lease = self.gw._try_acquire(self.lock, self.holder, self.lease_ms,
                                                 int(POLL_S * 1000))
                except GatewayError as e:
                    if not _transient(e):
                        raise  # refused outright (403 denied, 400): no retry will change it
                    _sleep(self._stop, 0.5)  # unreachable or unready: campaign again
                    continue
                if not isinstance(lease, Lease):
                    self._saw(lease.holder)
                    continue
                self._lead(lease)
        except KeyboardInterrupt:
            self._stop.set()
        except BaseException as e:
            self.error = e
            self._stop.set()
            raise
        return self

    def _lead(self, lease):
        self.lease = lease
        if self._stop.is_set():  # stop() raced with the grant
            lease.release()
            self.lease = None
            return
        self._saw(self.holder)
        started = False
        try:
            if self._on_started is not None:
                self._on_started(lease)
            started = True
            self._run(lease)
        finally:
            lease.release()  # no-op if lost; bounded at 1 s
            self.lease = None
            if started and self._on_stopped is not None:
                self._on_stopped()
