"""Lease behaviour against the fake gateway: the local deadline, refusals
and their reasons, release, callbacks, the context manager."""

import threading
import time

import pytest

import fencegate
from fencegate.lease import Lease

LEASE_MS = 600


def gw(fake, **kw):
    return fencegate.Gateway(fake.url, credentials=False, **kw)


def test_renews_at_a_third_and_keeps_the_lease(fake):
    fake.grant(LEASE_MS)
    lease = gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=0)
    time.sleep(LEASE_MS / 1000 * 3)
    assert not lease.lost.is_set()
    assert 6 <= len(fake.calls("/renew")) <= 12
    assert 0 < lease.remaining() <= LEASE_MS / 1000
    lease.check()
    lease.release()
    assert lease.reason == "released" and len(fake.calls("/release")) == 1


def test_hung_renewal_lost_at_the_local_deadline_as_unreachable(fake):
    """The renewal's HTTP call hangs (a blackholed gateway); the loss must
    come at the deadline, not when a socket gives up."""
    fake.grant(LEASE_MS)
    lease = gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=0)
    t0 = time.monotonic()
    deadline = t0 + lease.remaining()
    fake.hang.set()
    got = []
    lease.on_lost(lambda l: got.append((time.monotonic(), l.reason)))
    assert lease.lost.wait(5)
    lost_at = time.monotonic()
    assert lease.reason == "unreachable"
    assert lost_at - deadline < 0.15, lost_at - deadline    # at the deadline ...
    assert lost_at - deadline > -0.05                        # ... not before it
    assert got and got[0][1] == "unreachable"
    t = time.monotonic()
    lease.release()                                          # nothing sent, no wait
    assert time.monotonic() - t < 0.05 and lease.reason == "unreachable"


def test_refused_renewal_superseded_at_once(fake):
    fake.grant(3000)
    lease = gw(fake).lease("l", lease_ms=3000, wait_ms=0)
    fake.routes[("POST", "/renew")] = lambda r, b: (409, {"error": "superseded", "holder": "b",
                                                         "token": lease.token + 1, "live": True})
    assert lease.lost.wait(2.5)           # at the first renewal (1 s), long before 3 s
    assert lease.reason == "superseded"
    with pytest.raises(fencegate.LeaseLost) as e:
        lease.check()
    assert e.value.reason == "superseded"


def test_refused_renewal_same_token_is_expired(fake):
    fake.grant(900)
    lease = gw(fake).lease("l", lease_ms=900, wait_ms=0)
    fake.routes[("POST", "/renew")] = lambda r, b: (409, {"error": "superseded", "holder": "a",
                                                         "token": lease.token, "live": False})
    assert lease.lost.wait(2)
    assert lease.reason == "expired"


def test_unavailable_answers_retried_until_the_deadline(fake):
    fake.grant(LEASE_MS)
    lease = gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=0)
    fake.routes[("POST", "/renew")] = lambda r, b: (503, {"error": "unavailable"})
    assert lease.lost.wait(3)
    assert lease.reason == "unreachable"
    assert len(fake.calls("/renew")) >= 3


def test_gateway_gone_lost_at_the_deadline(fake):
    fake.grant(LEASE_MS)
    lease = gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=0)
    deadline = time.monotonic() + lease.remaining()
    fake.close()                                     # connection refused from now on
    assert lease.lost.wait(3)
    assert abs(time.monotonic() - deadline) < 0.15
    assert lease.reason == "unreachable"


def test_check_judges_the_clock_itself():
    """A process that wakes from a pause: check() sees the deadline passed
    even before the watchdog thread runs."""
    now = [100.0]
    lease = Lease(api=None, lock="l", holder="h",
                  grant={"token": 3, "lease_ms": 1000, "lease_id": "x"}, sent_at=100.0,
                  clock=lambda: now[0])                  # threads never started
    lease.check()
    assert lease.remaining() == pytest.approx(1.0)
    now[0] = 101.0
    with pytest.raises(fencegate.LeaseLost) as e:
        lease.check()
    assert e.value.reason == "expired" and lease.lost.is_set()


def test_with_never_runs_the_body_without_the_lease(fake):
    fake.routes[("POST", "/acquire")] = lambda r, b: (409, {"error": "held", "holder": "other",
                                                           "token": 7, "live": True})
    ran = []
    with pytest.raises(fencegate.LockHeld) as e:
        with gw(fake).lease("l", wait_ms=0):
            ran.append(1)
    assert not ran and e.value.holder == "other" and e.value.token == 7


def test_lock_held_after_wait_ms(fake):
    fake.routes[("POST", "/acquire")] = lambda r, b: (time.sleep(0.2) or
                                                     (409, {"error": "held", "holder": "o"}))
    t = time.monotonic()
    with pytest.raises(fencegate.LockHeld):
        gw(fake).lease("l", wait_ms=700)
    assert 0.6 < time.monotonic() - t < 1.5
    assert len(fake.calls("/acquire")) >= 2


def test_with_releases_on_exit_and_exceptions(fake):
    fake.grant(LEASE_MS)
    with pytest.raises(RuntimeError):
        with gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=0) as lease:
            raise RuntimeError("boom")
    assert lease.reason == "released" and len(fake.calls("/release")) == 1


def trickle(req, body):
    """An answer a byte at a time: no socket read ever times out."""
    req.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    for _ in range(100):
        req.wfile.write(b"x")
        req.wfile.flush()
        time.sleep(0.05)
    return 200, {}


@pytest.mark.parametrize("how", ["hang", "trickle"])
def test_release_bounded_at_one_second(fake, how):
    fake.grant(5000)
    lease = gw(fake).lease("l", lease_ms=5000, wait_ms=0)
    if how == "hang":
        fake.hang.set()
    else:
        fake.routes[("POST", "/release")] = trickle
    t = time.monotonic()
    lease.release()
    assert time.monotonic() - t < 1.2
    assert lease.lost.is_set() and lease.reason == "released"


def test_callbacks_once_and_late_ones_at_once(fake):
    fake.grant(LEASE_MS)
    lease = gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=0)
    got = []
    lease.on_lost(lambda l: got.append("early"))
    lease.on_lost(lambda l: 1 / 0)                # a failing callback stops no other
    lease.on_lost(lambda l: got.append("early2"))
    lease.release()
    lease.release()
    lease.on_lost(lambda l: got.append("late"))
    assert got == ["early", "early2", "late"]


def test_entering_a_lost_lease_raises(fake):
    fake.grant(LEASE_MS)
    lease = gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=0)
    lease.release()
    with pytest.raises(fencegate.LeaseLost):
        with lease:
            pass


def test_signed_with_credentials_plain_without(fake):
    fake.grant(LEASE_MS)
    fencegate.Gateway(fake.url, credentials={"aws_access_key_id": "AKX",
                                             "aws_secret_access_key": "s"}).lease(
        "l", lease_ms=LEASE_MS, wait_ms=0).release()
    fencegate.Gateway(fake.url, credentials=False).lease("l", lease_ms=LEASE_MS,
                                                         wait_ms=0).release()
    signed, plain = fake.calls("/acquire")
    assert signed[2]["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKX/")
    assert "/us-east-1/s3/aws4_request" in signed[2]["Authorization"]
    assert "Authorization" not in plain[2]


def test_credentials_from_botocore_chain(fake, monkeypatch):
    fake.grant(LEASE_MS)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKCHAIN")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    fencegate.Gateway(fake.url).lease("l", lease_ms=LEASE_MS, wait_ms=0).release()
    assert "Credential=AKCHAIN/" in fake.calls("/acquire")[0][2]["Authorization"]


def test_watch_yields_changes(fake):
    state = {"token": 1, "holder": "a", "live": True}

    def get(req, body):
        if "wait_ms" in req.path:
            time.sleep(0.1)
            state.update(token=state["token"] + 1, holder="b" if state["holder"] == "a" else "a")
        return 200, dict(state)
    fake.routes[("GET", "/locks/l")] = get
    stop = threading.Event()
    seen = []
    for doc in gw(fake).watch("l", stop=stop):
        seen.append((doc["token"], doc["holder"]))
        if len(seen) == 3:
            stop.set()
    assert seen == [(1, "a"), (2, "b"), (3, "a")]


def grant_after_a_wait(fake, seconds):
    """The fake's acquire answers a grant only after seconds (a held lock)."""
    def acquire(req, body):
        time.sleep(seconds)
        fake.token += 1
        return 200, {"token": fake.token, "lease_ms": LEASE_MS, "lease_id": "ab" * 32}
    fake.grant(LEASE_MS)
    fake.routes[("POST", "/acquire")] = acquire


def test_grant_after_a_long_wait_is_confirmed_before_use(fake):
    """The acquire waited longer than the lease (the lock was held): its
    deadline counted from the send is past, so the library renews before
    handing the lease out, and the deadline counts from that renewal."""
    grant_after_a_wait(fake, 0.8)
    lease = gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=5000)
    assert not lease.lost.is_set()
    assert lease.remaining() > LEASE_MS / 1000 * 0.8
    assert len(fake.calls("/renew")) >= 1
    lease.release()


def test_grant_after_a_long_wait_not_confirmed_is_not_used(fake):
    grant_after_a_wait(fake, 0.8)
    fake.routes[("POST", "/renew")] = lambda r, b: (409, {"error": "superseded", "token": 9})
    with pytest.raises(fencegate.GatewayError):
        gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=5000)


def test_trickling_gateway_lost_at_the_deadline(fake):
    """A renewal answered a byte at a time: every socket read gets data
    before its timeout, so only the watchdog can call the loss on time."""
    fake.grant(LEASE_MS)
    lease = gw(fake).lease("l", lease_ms=LEASE_MS, wait_ms=0)
    deadline = time.monotonic() + lease.remaining()
    fake.routes[("POST", "/renew")] = trickle
    assert lease.lost.wait(3)
    assert time.monotonic() - deadline < 0.15
    assert lease.reason == "unreachable"


@pytest.mark.parametrize("late,reason", [(0.05, "unreachable"), (2.0, "expired")])
def test_unanswered_renewal_at_the_deadline(late, reason):
    """Judged on time, a renewal still unanswered means the gateway is
    unreachable; judged long after (the process was paused), the lease
    simply expired."""
    now = [100.0]
    lease = Lease(api=None, lock="l", holder="h",
                  grant={"token": 3, "lease_ms": 1000, "lease_id": "x"}, sent_at=100.0,
                  clock=lambda: now[0])
    lease._inflight = True
    now[0] = 101.0 + late
    with pytest.raises(fencegate.LeaseLost) as e:
        lease.check()
    assert e.value.reason == reason


class FlakyCredentials:
    """A credential provider (as botocore's refreshable ones) whose refresh
    fails while fail() says so: a metadata service's hiccup."""

    def __init__(self, fail=lambda n: False):
        self.fail = fail
        self.calls = 0

    def get_frozen_credentials(self):
        from botocore.credentials import ReadOnlyCredentials
        from botocore.exceptions import CredentialRetrievalError
        self.calls += 1
        if self.fail(self.calls):
            raise CredentialRetrievalError(provider="test", error_msg="metadata hiccup")
        return ReadOnlyCredentials("AKFLAKY", "s", None)


def test_credentials_hiccup_does_not_stop_renewals(fake):
    """A refresh that fails for a while is no answer, retried until the
    deadline: the renewals go on once credentials come back, and the lease
    is kept.  (Before, the renewer thread died of it: lost at the deadline
    as "expired".)"""
    fake.grant(1500)
    failing = threading.Event()
    creds = FlakyCredentials(lambda n: failing.is_set())
    lease = fencegate.Gateway(fake.url, credentials=creds).lease("l", lease_ms=1500, wait_ms=0)
    failing.set()
    time.sleep(0.5 + 0.2)                 # the renewal due at 0.5 s fails, and its retries
    assert creds.calls >= 3 and not fake.calls("/renew")
    failing.clear()                       # long before the deadline (1.5 s)
    time.sleep(1.3)
    assert not lease.lost.is_set(), lease.reason
    assert lease.renewals >= 2
    assert "Credential=AKFLAKY/" in fake.calls("/renew")[-1][2]["Authorization"]
    lease.release()


def test_credentials_gone_lost_at_the_deadline_as_unreachable(fake):
    fake.grant(LEASE_MS)
    failing = threading.Event()
    lease = fencegate.Gateway(fake.url, credentials=FlakyCredentials(
        lambda n: failing.is_set())).lease("l", lease_ms=LEASE_MS, wait_ms=0)
    failing.set()
    assert lease.lost.wait(3)
    assert lease.reason == "unreachable"


def test_credentials_unavailable_at_acquire_is_no_answer(fake):
    """A GatewayError with status None (transient, as no answer), not
    botocore's CredentialRetrievalError; nothing was sent."""
    fake.grant(LEASE_MS)
    g = fencegate.Gateway(fake.url, credentials=FlakyCredentials(lambda n: True))
    with pytest.raises(fencegate.GatewayError) as e:
        g.lease("l", lease_ms=LEASE_MS, wait_ms=0)
    assert e.value.status is None and "credentials unavailable" in str(e.value)
    assert not fake.requests


def test_grant_not_confirmed_for_credentials_is_released(fake):
    """The grant came after a long wait; the refresh fails as the renewal
    that confirms it is signed: the grant is given back (credentials are
    back by then) before the GatewayError (status None) propagates."""
    grant_after_a_wait(fake, 0.8)
    creds = FlakyCredentials(lambda n: n == 2)           # 1: acquire, 2: confirm, 3: release
    with pytest.raises(fencegate.GatewayError) as e:
        fencegate.Gateway(fake.url, credentials=creds).lease("l", lease_ms=LEASE_MS,
                                                             wait_ms=5000)
    assert e.value.status is None
    assert not fake.calls("/renew")
    assert len(fake.calls("/release")) == 1


def test_the_lease_clock_counts_a_host_suspend():
    """Leases are judged on the boot-time clock, which counts a suspend of
    the machine (time.monotonic() stops then, and a worker resumed from a
    host suspend would write on a lease that ran out meanwhile).  A child
    in a time namespace whose boot-time clock is 100000 s ahead of its
    monotonic one stands for a machine that slept that long."""
    import shutil
    import subprocess
    import sys
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1)")
    code = "import time, fencegate.lease as l; print(l.now() - time.monotonic())"
    r = subprocess.run([unshare, "--time", "--boottime", "100000", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0 and "fencegate" not in r.stderr:
        pytest.skip(f"no time namespace here: {r.stderr.strip()[:200]}")
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) > 99990, r.stdout
