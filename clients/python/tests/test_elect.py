"""gw.elect against the fake gateway: callbacks in order, on_stopped only
after on_started, stop when asked (threaded and blocking)."""

import threading
import time

import fencegate


def test_leads_then_stops_callbacks_in_order(fake):
    fake.grant(600)
    ev = []

    def run(lease):
        ev.append(("run", lease.token))
        lease.lost.wait()

    e = fencegate.Gateway(fake.url, credentials=False).elect(
        "l", run, holder="me", lease_ms=600, on_started=lambda l: ev.append("started"),
        on_stopped=lambda: ev.append("stopped"), on_new_leader=lambda h: ev.append(("new", h)),
        block=False)
    time.sleep(1.0)
    assert e.is_leader
    e.stop(timeout=5)
    assert ev == [("new", "me"), "started", ("run", 1), "stopped"]
    assert len(fake.calls("/release")) == 1


def test_never_leading_never_stopped(fake):
    fake.routes[("POST", "/acquire")] = lambda r, b: (time.sleep(0.1) or
                                                     (409, {"error": "held", "holder": "other"}))
    ev = []
    stop = threading.Event()
    threading.Timer(0.6, stop.set).start()
    t = time.monotonic()
    fencegate.Gateway(fake.url, credentials=False).elect(
        "l", lambda l: ev.append("run"), on_started=lambda l: ev.append("started"),
        on_stopped=lambda: ev.append("stopped"), on_new_leader=lambda h: ev.append(("new", h)),
        stop=stop)                                         # blocking form
    assert time.monotonic() - t < 1.5
    assert ev == [("new", "other")]


def test_campaigns_again_after_loss(fake):
    fake.grant(600)
    ev = []

    def run(lease):
        ev.append(lease.token)
        if lease.token == 1:
            fake.routes[("POST", "/renew")] = lambda r, b: (409, {"error": "superseded",
                                                                 "token": 99})
        lease.lost.wait()
        ev.append(lease.reason)
        fake.routes[("POST", "/renew")] = lambda r, b: (200, {})

    e = fencegate.Gateway(fake.url, credentials=False).elect("l", run, lease_ms=600,
                                                             on_stopped=lambda: ev.append("s"),
                                                             block=False)
    deadline = time.monotonic() + 5
    while len(ev) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    e.stop(timeout=5)
    assert ev[:4] == [1, "superseded", "s", 2]
    assert ev[-2:] == ["released", "s"]


def test_failing_on_started_gets_no_on_stopped(fake):
    fake.grant(600)
    ev = []

    def started(lease):
        raise RuntimeError("no")

    e = fencegate.Gateway(fake.url, credentials=False).elect(
        "l", lambda l: ev.append("run"), on_started=started,
        on_stopped=lambda: ev.append("stopped"), block=False)
    e.join(timeout=5)
    assert isinstance(e.error, RuntimeError)
    assert "stopped" not in ev and "run" not in ev
    assert len(fake.calls("/release")) == 1


def test_refused_campaign_ends_the_election(fake):
    """403 denied is not transient: the election ends with the error (raised
    in the blocking form, kept in election.error in the threaded one), where
    503 and no answer are asked again."""
    calls = []

    def acquire(r, b):
        calls.append(1)
        if len(calls) == 1:
            return (503, {"error": "unavailable"})
        return (403, {"error": "denied", "message": "not yours"})

    fake.routes[("POST", "/acquire")] = acquire
    stop = threading.Event()
    threading.Timer(5, stop.set).start()  # a broken build must not hang the suite
    t = time.monotonic()
    try:
        fencegate.Gateway(fake.url, credentials=False).elect("l", lambda l: None, stop=stop)
        raise AssertionError("elect returned instead of raising")
    except fencegate.GatewayError as e:
        assert e.status == 403
    assert len(calls) == 2 and time.monotonic() - t < 3
    stop.set()
    calls.clear()
    e = fencegate.Gateway(fake.url, credentials=False).elect("l", lambda l: None, block=False)
    e.join(5)
    assert isinstance(e.error, fencegate.GatewayError) and e.error.status == 403
