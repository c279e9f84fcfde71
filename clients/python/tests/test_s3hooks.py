"""lease.attach(s3): headers on writes, local refusal after loss, typed
fencing errors raised once with botocore's retries on, newest attach wins."""

import time

import boto3
import botocore.config
import pytest
from botocore.exceptions import ClientError

import fencegate

ERR = ('<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
       '<Message>refused</Message></Error>')


def s3(fake, mode="standard", attempts=5):
    return boto3.session.Session().client(
        "s3", endpoint_url=fake.url, aws_access_key_id="AK", aws_secret_access_key="SK",
        region_name="us-east-1",
        config=botocore.config.Config(s3={"addressing_style": "path"},
                                      retries={"mode": mode, "total_max_attempts": attempts}))


@pytest.fixture
def lease(fake):
    fake.grant(5000)
    fake.routes[("PUT", "")] = lambda r, b: (200, b"", {"ETag": '"e"'})
    fake.routes[("GET", "/b/k")] = lambda r, b: (200, b"data")
    le = fencegate.Gateway(fake.url, credentials=False).lease("orders", lease_ms=5000, wait_ms=0)
    yield le
    le.release()


def s3_calls(fake):
    return [r for r in fake.requests if "/_fencegate/" not in r[1]]


def test_writes_carry_lock_and_token_parts_the_lock_only(fake, lease):
    c = s3(fake)
    lease.attach(c)
    c.put_object(Bucket="b", Key="k", Body=b"x")
    c.upload_part(Bucket="b", Key="k", UploadId="u1", PartNumber=1, Body=b"p")
    c.get_object(Bucket="b", Key="k")["Body"].read()
    put, part, get = s3_calls(fake)
    assert put[2]["X-Fencing-Token"] == str(lease.token)
    assert put[2]["X-Fencing-Lock"] == "orders"
    assert "x-fencing-token" in put[2]["Authorization"].lower()      # signed with the request
    assert part[2]["X-Fencing-Lock"] == "orders" and "X-Fencing-Token" not in part[2]
    assert "X-Fencing-Token" not in get[2] and "X-Fencing-Lock" not in get[2]


@pytest.mark.parametrize("code,status", [("StaleFencingToken", 409),
                                         ("FencingLeaseExpired", 409),
                                         ("FencingTokenNotGranted", 409),
                                         ("MissingFencingToken", 428)])
@pytest.mark.parametrize("mode", ["standard", "legacy", "adaptive"])
def test_refusals_typed_and_sent_once(fake, lease, code, status, mode):
    fake.routes[("PUT", "")] = lambda r, b: (status, ERR.format(code=code).encode(),
                                             {"Content-Type": "application/xml"})
    c = s3(fake, mode=mode, attempts=5)
    lease.attach(c)
    with pytest.raises(getattr(fencegate, code)) as e:
        c.put_object(Bucket="b", Key="k", Body=b"x")
    assert isinstance(e.value, ClientError)
    assert e.value.response["Error"]["Code"] == code
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert len(s3_calls(fake)) == 1


FENCED = ('<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
          '<Message>refused</Message><Lock>{lock}</Lock><Token>{token}</Token>'
          '<CurrentToken>{current}</CurrentToken></Error>')


@pytest.mark.parametrize("code,reason", [("StaleFencingToken", "superseded"),
                                         ("FencingLeaseExpired", "expired"),
                                         ("FencingTokenNotGranted", None)])
def test_a_refusal_naming_the_lease_loses_it_before_raising(fake, lease, code, reason):
    """The gateway's refusal of this lease's token is its judgment on the
    lease: lost (on_lost run) before the caller sees the error, and the next
    write is refused here, unsent.  A token the gateway never granted says
    nothing about the lease."""
    fake.routes[("PUT", "")] = lambda r, b: (409, FENCED.format(
        code=code, lock="orders", token=lease.token, current=lease.token + 1).encode(),
        {"Content-Type": "application/xml"})
    c = s3(fake)
    lease.attach(c)
    seen = []
    lease.on_lost(lambda le: seen.append(le.reason))
    with pytest.raises(getattr(fencegate, code)):
        try:
            c.put_object(Bucket="b", Key="k", Body=b"x")
        finally:
            seen.append("raised")
    if reason is None:
        assert seen == ["raised"] and not lease.lost.is_set()
        return
    assert seen == [reason, "raised"] and lease.reason == reason
    with pytest.raises(fencegate.LeaseLost):
        c.put_object(Bucket="b", Key="k", Body=b"y")
    assert len(s3_calls(fake)) == 1


@pytest.mark.parametrize("lock,delta", [("orders", 1), ("other", 0)])
def test_a_refusal_naming_another_lease_leaves_this_one(fake, lease, lock, delta):
    """A refusal of another token or lock (a part claimed by an older
    upload's epoch, say) is no judgment on the attached lease."""
    fake.routes[("PUT", "")] = lambda r, b: (409, FENCED.format(
        code="StaleFencingToken", lock=lock, token=lease.token + delta,
        current=lease.token + 5).encode(), {"Content-Type": "application/xml"})
    c = s3(fake)
    lease.attach(c)
    with pytest.raises(fencegate.StaleFencingToken):
        c.upload_part(Bucket="b", Key="k", UploadId="u", PartNumber=1, Body=b"p")
    assert not lease.lost.is_set()


def test_a_refusal_after_the_deadline_reads_expired(fake):
    """Woken from a pause past its deadline, a process whose in-flight write
    comes back refused as stale reads the reason its clock gives, "expired",
    whichever thread looks first."""
    fake.grant(5000)
    now = [100.0]
    gw = fencegate.Gateway(fake.url, credentials=False)
    le = gw.lease("orders", lease_ms=5000, wait_ms=0)
    le._clock = lambda: now[0]          # the watchdog sleeps on the real clock: not yet
    le._deadline = 105.0
    fake.routes[("PUT", "")] = lambda r, b: (409, FENCED.format(
        code="StaleFencingToken", lock="orders", token=le.token,
        current=le.token + 1).encode(), {"Content-Type": "application/xml"})
    c = s3(fake)
    le.attach(c)
    # checked before sending on time; "paused" 2 s past the deadline in flight
    c.meta.events.register("before-send.s3.PutObject", lambda **kw: now.__setitem__(0, 107.0))
    with pytest.raises(fencegate.StaleFencingToken):
        c.put_object(Bucket="b", Key="k", Body=b"x")
    assert le.lost.is_set() and le.reason == "expired"
    le.release()


def test_other_errors_still_retried(fake, lease):
    fake.routes[("PUT", "")] = lambda r, b: (503, ERR.format(code="SlowDown").encode())
    c = s3(fake, attempts=3)
    lease.attach(c)
    with pytest.raises(ClientError) as e:
        c.put_object(Bucket="b", Key="k", Body=b"x")
    assert not isinstance(e.value, fencegate.FencingError)
    assert len(s3_calls(fake)) == 3


def test_lost_lease_refuses_locally_without_sending(fake, lease):
    c = s3(fake)
    lease.attach(c)
    lease._lose("superseded")
    with pytest.raises(fencegate.LeaseLost) as e:
        c.put_object(Bucket="b", Key="k", Body=b"x")
    assert e.value.reason == "superseded"
    with pytest.raises(fencegate.LeaseLost):
        c.upload_part(Bucket="b", Key="k", UploadId="u", PartNumber=1, Body=b"p")
    c.get_object(Bucket="b", Key="k")                     # reads pass
    assert [r[0] for r in s3_calls(fake)] == ["GET"]


def test_newest_attach_wins_and_detach_restores(fake, lease):
    c = s3(fake)
    other = s3(fake)
    lease.attach(c)
    newer = fencegate.Gateway(fake.url, credentials=False).lease("orders2", lease_ms=5000,
                                                                 wait_ms=0)
    handle = newer.attach(c)
    lease._lose("superseded")                              # the old lease's hooks are gone
    c.put_object(Bucket="b", Key="k", Body=b"1")
    assert s3_calls(fake)[-1][2]["X-Fencing-Token"] == str(newer.token)
    handle.detach()
    c.put_object(Bucket="b", Key="k", Body=b"2")
    other.put_object(Bucket="b", Key="k", Body=b"3")     # never attached
    assert "X-Fencing-Token" not in s3_calls(fake)[-2][2]
    assert "X-Fencing-Token" not in s3_calls(fake)[-1][2]
    newer.release()


def test_release_detaches(fake, lease):
    c = s3(fake)
    with fencegate.Gateway(fake.url, credentials=False).lease("o3", lease_ms=5000,
                                                              wait_ms=0) as le:
        le.attach(c)
        c.put_object(Bucket="b", Key="k", Body=b"1")
    c.put_object(Bucket="b", Key="k", Body=b"2")          # released: the client is plain again
    assert "X-Fencing-Token" in s3_calls(fake)[0][2]
    assert "X-Fencing-Token" not in s3_calls(fake)[1][2]


def test_presigned_urls_untouched(fake, lease):
    c = s3(fake)
    lease.attach(c)
    url = c.generate_presigned_url("put_object", Params={"Bucket": "b", "Key": "k"})
    assert "fencing" not in url.lower()


def reset(req, body):
    """The body arrived; the connection dies before any answer."""
    import socket
    req.connection.shutdown(socket.SHUT_RDWR)
    return 200, b""


@pytest.mark.parametrize("answer", ["reset", "500"])
@pytest.mark.parametrize("mode", ["standard", "legacy", "adaptive"])
def test_lost_before_a_retry_is_outcome_unknown(fake, lease, mode, answer):
    """A write's first attempt reaches the gateway and gets no usable answer
    (reset, or a 500 botocore retries); by the retry the lease's deadline
    has passed.  The retry is not sent, and the call does not say "nothing
    was sent" (LeaseLost): it raises WriteOutcomeUnknown."""
    def put(req, body):
        lease._clock = lambda: time.monotonic() + 60   # the deadline passes meanwhile
        if answer == "reset":
            return reset(req, body)
        return 500, ERR.format(code="InternalError").encode(), {"Content-Type": "application/xml"}
    fake.routes[("PUT", "")] = put
    c = s3(fake, mode=mode, attempts=5)
    lease.attach(c)
    with pytest.raises(fencegate.WriteOutcomeUnknown) as e:
        c.put_object(Bucket="b", Key="k", Body=b"x")
    assert not isinstance(e.value, fencegate.LeaseLost)
    assert isinstance(e.value, fencegate.FencegateError)
    assert isinstance(e.value.__cause__, fencegate.LeaseLost)
    assert (e.value.lock, e.value.token, e.value.reason) == ("orders", lease.token, "expired")
    assert e.value.__cause__.reason == "expired"
    assert "outcome is unknown" in str(e.value)
    assert len(s3_calls(fake)) == 1                     # the retry never left
    # a new call: nothing of it sent, so LeaseLost
    with pytest.raises(fencegate.LeaseLost):
        c.put_object(Bucket="b", Key="k", Body=b"y")
    assert len(s3_calls(fake)) == 1


def dead_url():
    """An address where nothing listens: every connect is refused."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def s3_at(url, mode, attempts):
    return boto3.session.Session().client(
        "s3", endpoint_url=url, aws_access_key_id="AK", aws_secret_access_key="SK",
        region_name="us-east-1",
        config=botocore.config.Config(s3={"addressing_style": "path"},
                                      retries={"mode": mode, "total_max_attempts": attempts}))


def after_each_attempt(client, fn):
    """fn(n) after the n-th attempt's end, once the hooks have judged it."""
    seen = []

    def hook(**kwargs):
        seen.append(1)
        fn(len(seen))
    client.meta.events.register("needs-retry.s3", hook)


@pytest.mark.parametrize("mode", ["standard", "legacy"])
def test_lost_after_refused_connects_is_lease_lost(fake, lease, mode):
    """Every attempt so far was refused at connect (the gateway restarting):
    nothing of the write left, so a loss found before the retry is LeaseLost,
    exact, not an unknown outcome."""
    c = s3_at(dead_url(), mode, 5)
    lease.attach(c)

    def attempt_ended(n):
        if n == 2:
            lease._clock = lambda: time.monotonic() + 60
    after_each_attempt(c, attempt_ended)
    with pytest.raises(fencegate.LeaseLost) as e:
        c.put_object(Bucket="b", Key="k", Body=b"x")
    assert not isinstance(e.value, fencegate.WriteOutcomeUnknown)
    assert e.value.reason == "expired"


def test_lost_after_a_sent_attempt_then_refused_is_outcome_unknown(fake, lease):
    """The first attempt reached the store and was reset, the next was
    refused at connect: the first may have landed, so the loss is still
    WriteOutcomeUnknown."""
    store = type(fake)()
    store.routes[("PUT", "")] = reset
    c = s3_at(store.url, "standard", 5)
    lease.attach(c)

    def attempt_ended(n):
        if n == 1:
            store.close()                 # later attempts are refused at connect
        if n == 2:
            lease._clock = lambda: time.monotonic() + 60
    after_each_attempt(c, attempt_ended)
    try:
        with pytest.raises(fencegate.WriteOutcomeUnknown) as e:
            c.put_object(Bucket="b", Key="k", Body=b"x")
    finally:
        store.close()
    assert isinstance(e.value.__cause__, fencegate.LeaseLost)
    assert len([r for r in store.requests if r[0] == "PUT"]) == 1
