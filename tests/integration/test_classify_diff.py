"""Differential test of request classification against the real store (issue
11, DESIGN.md G9 and "Request classification: fail closed").

A generated corpus of hostile request variants (classify_corpus.py: every
method, every pair of S3's sub-resources, encoded and mis-spelled names and
values, bucket and object level, browser form uploads, DeleteObjects in odd
forms, copies into the fence, method overrides) is sent through the gateway
exactly as written on the wire, in batches (the requests of a batch
concurrently, each on its own connection).  Around each batch the store is
read directly (boto3 to RGW, not through the gateway): the objects, delete
markers, multipart uploads and parts under the fenced prefix, the fenced
object's tagging and ACL, the bucket's configuration, and the set of
buckets.  No request carries a valid token of the fenced lock and
bucket writes are not allowed, so any change there fails the test.  A dirty
batch is bisected, each half replayed after the store is put back (repaired
in place, or a fresh fenced bucket when its configuration changed), until the
culprits are named (request, response, what changed at the store).  A GET
the gateway refuses with its own error document (no RGW request id) fails
the test too: reads pass with parameters S3 ignores.  So does any answer from
RGW to what must never be forwarded, though RGW 16 ignores it and a more
lenient store might not: other methods (COPY, MOVE, lower-case put, ...),
method-override headers, DeleteObjects with lower-case or prefixed elements.

Runs: without principals (unsigned, allow_unfenced_writes true), and the writes
signed by a principal whose `locks` names only another lock, without a token,
and carrying that lock's valid token with allow_unfenced_writes false.
Controls prove the harness can see a change (a valid fenced write through the gateway, a
direct bucket write at RGW), and normal traffic still passes.

FENCEGATE_DIFF_BUDGET (seconds, default 60) bounds the bisection of each run;
dirty batches left over are reported as such (the test fails either way).
"""

import concurrent.futures
import http.client
import os
import sys
import time
import uuid

import pytest
from botocore.exceptions import ClientError

import classify_corpus as cc
from test_fencing import grant

LOCK = "orders"
OTHER = "other"
AK = "AKIAFENCEGATEDIFFER"
SK = "differ-secret-0123456789abcdefghijk"
BATCH = int(os.environ.get("FENCEGATE_DIFF_BATCH", "150"))
BUDGET = float(os.environ.get("FENCEGATE_DIFF_BUDGET", "60"))
POOL = 1000  # fenced bucket names in the config (a dirty bucket is abandoned)


def _err(e):
    return ("error", e.response.get("Error", {}).get("Code") or
            str(e.response["ResponseMetadata"]["HTTPStatusCode"]))


def _call(fn, pick, **kw):
    try:
        return pick(fn(**kw))
    except ClientError as e:
        return _err(e)


def _strip(d):
    return {k: v for k, v in d.items() if k != "ResponseMetadata"}


_CONFIG = [  # (name, client method, what to keep)
    ("policy", "get_bucket_policy", lambda r: r.get("Policy")),
    ("lifecycle", "get_bucket_lifecycle_configuration", lambda r: r.get("Rules")),
    ("acl", "get_bucket_acl", lambda r: r.get("Grants")),
    ("tagging", "get_bucket_tagging", lambda r: r.get("TagSet")),
    ("cors", "get_bucket_cors", lambda r: r.get("CORSRules")),
    ("versioning", "get_bucket_versioning", _strip),
    ("website", "get_bucket_website", _strip),
    ("encryption", "get_bucket_encryption", _strip),
    ("notification", "get_bucket_notification_configuration", _strip),
    ("object-lock", "get_object_lock_configuration", _strip),
    ("logging", "get_bucket_logging", _strip),
    ("replication", "get_bucket_replication", _strip),
    ("requestPayment", "get_bucket_request_payment", _strip),
    ("publicAccessBlock", "get_public_access_block", _strip),
    ("accelerate", "get_bucket_accelerate_configuration", _strip),
]


class Store:
    """The test's buckets at RGW, read and repaired directly."""

    def __init__(self, rgw):
        self.c = rgw.client()
        self.prefix = f"fgdiff-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.pool = [f"{self.prefix}-f{i}" for i in range(POOL)]
        self.victim = f"{self.prefix}-v"
        self.new = f"{self.prefix}-n"
        self.owner = self.c.list_buckets()["Owner"]["ID"]
        self.used = []
        self.pool_x = concurrent.futures.ThreadPoolExecutor(12)
        self.c.create_bucket(Bucket=self.victim)

    def fresh(self):
        """A new fenced bucket seeded with fenced objects and a fenced upload: ctx."""
        assert self.pool, "fenced bucket pool exhausted"
        b = self.pool.pop(0)
        self.used.append(b)
        c = self.c
        c.create_bucket(Bucket=b)
        c.put_object(Bucket=b, Key=cc.KEY, Body=b"seed a")
        c.put_object(Bucket=b, Key=cc.KEY2, Body=b"seed b")
        c.put_object(Bucket=b, Key="free/src", Body=b"copy source outside the fence")
        up = c.create_multipart_upload(Bucket=b, Key=cc.MP_KEY)["UploadId"]
        etag = c.upload_part(Bucket=b, Key=cc.MP_KEY, UploadId=up, PartNumber=1,
                             Body=b"part one")["ETag"]
        ctx = {"B": b, "V": self.victim, "N": self.new, "U": up, "E": etag,
               "OWNER": self.owner}
        ctx["base"] = self.snap(ctx)
        return ctx

    def snap(self, ctx):
        """What a request must not change without a valid token of the fenced lock
        (read with parallel calls; boto3 clients are thread-safe)."""
        c, b = self.c, ctx["B"]

        def versions():
            r = c.list_object_versions(Bucket=b, Prefix=cc.FENCED)
            return (sorted((v["Key"], v["VersionId"], v["ETag"]) for v in r.get("Versions", [])),
                    sorted((m["Key"], m["VersionId"]) for m in r.get("DeleteMarkers", [])))

        def uploads():
            r = c.list_multipart_uploads(Bucket=b, Prefix=cc.FENCED)
            return sorted((u["Key"], u["UploadId"]) for u in r.get("Uploads", []))

        def buckets():  # all of them: a request may name a bucket of its own
            return sorted(x["Name"] for x in c.list_buckets().get("Buckets", []))

        calls = {
            "versions": versions, "uploads": uploads, "buckets": buckets,
            "parts": lambda: _call(c.list_parts, lambda r: [(p["PartNumber"], p["ETag"])
                                                            for p in r.get("Parts", [])],
                                   Bucket=b, Key=cc.MP_KEY, UploadId=ctx["U"]),
            "object tagging": lambda: _call(c.get_object_tagging, lambda r: r.get("TagSet"),
                                            Bucket=b, Key=cc.KEY),
            "object acl": lambda: _call(c.get_object_acl, lambda r: r.get("Grants"),
                                        Bucket=b, Key=cc.KEY),
        }
        for name, meth, pick in _CONFIG:
            calls["bucket " + name] = (lambda m=meth, p=pick: _call(getattr(c, m), p, Bucket=b))
        for name, meth, pick in _CONFIG[:6]:
            calls["empty bucket " + name] = (
                lambda m=meth, p=pick: _call(getattr(c, m), p, Bucket=self.victim))
        futs = {k: self.pool_x.submit(fn) for k, fn in calls.items()}
        s = {k: f.result() for k, f in futs.items()}
        s["objects"], s["delete markers"] = s.pop("versions")
        return s

    @staticmethod
    def diff(before, after):
        return {k: (before[k], after.get(k)) for k in before if before[k] != after.get(k)}

    def _empty(self, b):
        c = self.c
        try:
            for u in c.list_multipart_uploads(Bucket=b).get("Uploads", []):
                c.abort_multipart_upload(Bucket=b, Key=u["Key"], UploadId=u["UploadId"])
            r = c.list_object_versions(Bucket=b)
            objs = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                    for v in r.get("Versions", []) + r.get("DeleteMarkers", [])]
            for i in range(0, len(objs), 1000):
                c.delete_objects(Bucket=b, Delete={"Objects": objs[i:i + 1000], "Quiet": True})
            c.delete_bucket(Bucket=b)
        except ClientError as e:
            print(f"cleanup {b}: {e}", file=sys.stderr)

    def restore(self, ctx, d):
        """The baseline again after the changes d: the new bucket gone, the empty
        one recreated bare; the fenced bucket repaired in place when only its
        objects and uploads changed, else replaced by a fresh one.  Returns the ctx."""
        names = {x["Name"] for x in self.c.list_buckets().get("Buckets", [])}
        if self.new in names:
            self._empty(self.new)
        if any(k.startswith("empty bucket") for k in d) or self.victim not in names:
            if self.victim in names:
                self._empty(self.victim)
            self.c.create_bucket(Bucket=self.victim)
        if any(k.startswith("bucket ") or k == "delete markers" for k in d):
            return self.fresh()
        return self._repair(ctx)

    def _repair(self, ctx):
        c, b = self.c, ctx["B"]
        r = c.list_object_versions(Bucket=b, Prefix=cc.FENCED)
        for v in r.get("Versions", []):
            if v["Key"] not in (cc.KEY, cc.KEY2):
                c.delete_object(Bucket=b, Key=v["Key"], VersionId=v["VersionId"])
        c.put_object(Bucket=b, Key=cc.KEY, Body=b"seed a")  # also resets tagging and ACL
        c.put_object(Bucket=b, Key=cc.KEY2, Body=b"seed b")
        for u in c.list_multipart_uploads(Bucket=b, Prefix=cc.FENCED).get("Uploads", []):
            c.abort_multipart_upload(Bucket=b, Key=u["Key"], UploadId=u["UploadId"])
        up = c.create_multipart_upload(Bucket=b, Key=cc.MP_KEY)["UploadId"]
        etag = c.upload_part(Bucket=b, Key=cc.MP_KEY, UploadId=up, PartNumber=1,
                             Body=b"part one")["ETag"]
        ctx = dict(ctx, U=up, E=etag)
        ctx["base"] = self.snap(ctx)
        return ctx

    def cleanup(self):
        self.pool_x.shutdown()
        names = {x["Name"] for x in self.c.list_buckets().get("Buckets", [])}
        for b in self.used + [self.victim, self.new]:
            if b in names:
                self._empty(b)


def send(gw, method, target, headers, body, timeout=15):
    """One request on its own connection, bytes as given; (status, S3 code), the
    code prefixed "gw:" when the answer is the gateway's own (no RGW request id)."""
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=timeout)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.putheader("Connection", "close")
        conn.endheaders(body if body else None)
        r = conn.getresponse()
        data = r.read().decode(errors="replace")
        code = data.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in data else ""
        if not (r.getheader("x-amz-request-id") or "").startswith("tx"):
            code = "gw:" + code
        return r.status, code
    except (OSError, http.client.HTTPException) as e:
        return 0, type(e).__name__
    finally:
        conn.close()


class Run:
    """Sends a corpus through one gateway and names the requests that changed the store."""

    def __init__(self, gw, store, creds=None, extra_headers=None):
        self.gw, self.store = gw, store
        self.creds, self.extra = creds, extra_headers
        self.sent = 0
        self.statuses = {}
        self.culprits = []  # (reqs, responses, diff)
        self.unresolved = []
        self.forwarded = []  # requests that must be refused, answered by RGW
        self.bad_sig = []  # requests whose signature the gateway did not accept
        self.refused_reads = []  # GETs the gateway itself refused (over-refusal)
        self.ctx = store.fresh()

    def _send_all(self, reqs):
        """Sends reqs concurrently (their order within a batch is not part of the test)."""
        wire = [cc.render(r, self.ctx, self.gw.host, self.creds, self.extra) for r in reqs]
        self.sent += len(wire)
        return list(self.store.pool_x.map(lambda w: send(self.gw, *w), wire))

    def _dirty(self, reqs):
        """Sends reqs from the baseline; (diff, responses); restores when dirty."""
        resp = self._send_all(reqs)
        d = self.store.diff(self.ctx["base"], self.store.snap(self.ctx))
        if d:
            self.ctx = self.store.restore(self.ctx, d)
        return d, resp

    def _resend_read(self, req, tries=3):
        """The gateway's answer to a GET it refused, sent again alone: None when it
        passes now.  (An upstream connection can be left unreadable by RGW 16, which
        sends a body after HEAD ?acl; the next request on it fails with 400, a
        transient failure, not a refusal.)"""
        for _ in range(tries):
            st = send(self.gw, *cc.render(req, self.ctx, self.gw.host, self.creds, self.extra))
            if not (st[0] >= 400 and st[1].startswith("gw:")):
                return None
        return st

    def _bisect(self, reqs, d, resp, deadline):
        if len(reqs) == 1:
            self.culprits.append((reqs, resp, d))
            return
        if time.monotonic() > deadline:
            self.unresolved.append((reqs, d))
            return
        half = len(reqs) // 2
        found = False
        for part in (reqs[:half], reqs[half:]):
            pd, presp = self._dirty(part)
            if pd:
                found = True
                self._bisect(part, pd, presp, deadline)
        if not found:  # only together: name the group
            self.culprits.append((reqs, resp, d))

    def run(self, reqs, budget=BUDGET):
        deadline = time.monotonic() + budget
        for i in range(0, len(reqs), BATCH):
            batch = reqs[i:i + BATCH]
            d, resp = self._dirty(batch)
            for r, st in zip(batch, resp):
                self.statuses[st] = self.statuses.get(st, 0) + 1
                # a GET the gateway refused itself (its own error document): HEADs
                # carry no document, and a failed upstream transfer is no refusal
                if (r.method == "GET" and r.tag != "override" and st[0] >= 400
                        and st[1].startswith("gw:") and st[1] != "gw:"):
                    st = self._resend_read(r)
                    if st is not None:
                        self.refused_reads.append((r, st))
                if r.refuse and st[0] != 0 and not st[1].startswith("gw:"):
                    self.forwarded.append((r, st))
                if st[1].endswith("SignatureDoesNotMatch"):
                    self.bad_sig.append(r)
            if d:
                self._bisect(batch, d, resp, deadline)
        return self

    def report(self, label):
        codes = sorted(self.statuses.items())
        lines = [f"{label}: {len(self.culprits)} culprit(s), {len(self.unresolved)} "
                 f"unresolved dirty group(s), {self.sent} requests sent, statuses {codes}"]
        for reqs, resp, d in self.culprits:
            if len(reqs) > 1:
                lines.append(f"  together ({len(reqs)} requests), from:")
            for r, (st, code) in zip(reqs, resp):
                lines.append(f"  {r.describe()} -> {st} {code}")
            lines.append("      changed: " + _changes(d))
        if self.refused_reads:
            lines.append(f"  {len(self.refused_reads)} GET(s) refused by the gateway itself:")
        for r, (st, code) in self.refused_reads[:40]:
            lines.append(f"  read refused: {r.describe()} -> {st} {code}")
        if self.forwarded:
            lines.append(f"  {len(self.forwarded)} request(s) forwarded that must be refused:")
        for r, (st, code) in self.forwarded[:60]:
            lines.append(f"  forwarded: {r.describe()} -> {st} {code}")
        for reqs, d in self.unresolved:
            lines.append(f"  unresolved group of {len(reqs)} from {reqs[0].describe()}: "
                         f"changed {sorted(d)}")
        return "\n".join(lines)


def _changes(d):
    out = []
    for k, (a, b) in d.items():
        if isinstance(a, list) and isinstance(b, list):
            added = [x for x in b if x not in a]
            gone = [x for x in a if x not in b]
            out.append(f"{k} +{_short(added, 160)} -{_short(gone, 160)}")
        else:
            out.append(f"{k} {_short(a, 80)} -> {_short(b, 160)}")
    return "; ".join(out)


def _short(v, n=200):
    s = repr(v)
    return s if len(s) <= n else s[:n - 3] + "..."


# Conditional writes off: the harness empties its pooled buckets straight at
# RGW between runs, behind the gateway's back, so a control write could meet a
# stale ETag and get the (retryable) 503 SlowDown that conditional writes answer
# then; this test judges classification (G9), test_conditional_writes.py those.
NO_COND = {"conditional_writes": "off"}


def _config(store, extra=None):
    cfg = {
        "fences": [{"bucket": b, "prefix": cc.FENCED, "lock": LOCK, "require_token": True}
                   for b in store.pool],
        "fencing": {"allow_bucket_writes": False, **NO_COND},
    }
    cfg.update(extra or {})
    return cfg


@pytest.fixture
def store(rgw):
    s = Store(rgw)
    yield s
    s.cleanup()


def _check(run, label, t0):
    took = time.monotonic() - t0
    text = run.report(label) + f"\n{label}: {took:.1f} s"
    print(text)
    assert not (run.culprits or run.unresolved or run.refused_reads or run.forwarded), text


def test_harness_sees_changes_and_normal_traffic_passes(gateway, store, rgw):
    """Not vacuous: a valid fenced write and a direct bucket write are seen;
    reads with unknown parameters and unfenced writes still work."""
    gw = gateway(_config(store))
    run = Run(gw, store)
    ctx = run.ctx
    b = ctx["B"]
    grant(gw, 1, LOCK)
    ok = cc.Req("PUT", "/{B}/orders/a", {"X-Fencing-Token": "1", "X-Fencing-Lock": LOCK},
                "a valid fenced write")
    st, code = send(gw, *cc.render(ok, ctx, gw.host))
    assert st == 200, code
    d = store.diff(ctx["base"], store.snap(ctx))
    assert list(d) == ["objects"], d
    ctx = run.ctx = store.restore(ctx, d)
    store.c.put_bucket_tagging(Bucket=ctx["B"], Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    d = store.diff(ctx["base"], store.snap(ctx))
    assert list(d) == ["bucket tagging"], d
    ctx = run.ctx = store.restore(ctx, d)
    store.c.create_bucket(Bucket=store.new)
    d = store.diff(ctx["base"], store.snap(ctx))
    assert list(d) == ["buckets"], d
    ctx = run.ctx = store.restore(ctx, d)
    assert not store.diff(ctx["base"], store.snap(ctx))
    # a bisection names the one culprit among harmless requests
    harmless = [cc.Req("GET", "/{B}/orders/a?foo=bar")] * 5
    run.run(harmless + [ok] + harmless, budget=30)
    assert len(run.culprits) == 1 and run.culprits[0][0] == [ok], run.report("control")
    ctx = run.ctx
    b = ctx["B"]
    # normal traffic: reads with unknown parameters, listing, unfenced writes
    for req, want in ((cc.Req("GET", "/{B}/orders/a?foo=bar&x-id=GetObject&unknown"), 200),
                      (cc.Req("HEAD", "/{B}/orders/a?whatever=1"), 200),
                      (cc.Req("GET", "/{B}?list-type=2&prefix=orders/&fetch-owner=true&zz=1"), 200),
                      (cc.Req("GET", "/{B}?versions&prefix=orders/"), 200),
                      (cc.Req("GET", "/{B}/orders/a?tagging&foo"), 200),
                      (cc.Req("GET", "/{B}/orders/a?versionId=null&response-content-type=a%2Fb"),
                       200),
                      (cc.Req("GET", "/{B}?prefix=orders%2F&delimiter=%2F&encoding-type=url"), 200),
                      (cc.Req("GET", "/{B}?uploads&prefix=orders/&foo=bar"), 200),
                      (cc.Req("GET", "/{B}?acl&unknown=1"), 200),
                      (cc.Req("GET", "/{B}?location&x-id=GetBucketLocation"), 200),
                      (cc.Req("HEAD", "/{B}?foo"), 200),
                      (cc.Req("GET", "/?foo=bar"), 200),
                      (cc.Req("PUT", "/{B}/free/new?x-id=PutObject", body="free"), 200),
                      (cc.Req("DELETE", "/{B}/free/new"), 204)):
        st, code = send(gw, *cc.render(req, ctx, gw.host))
        assert st == want, (req.describe(), st, code)
    assert store.c.get_object(Bucket=b, Key=cc.KEY)["Body"].read() == b"seed a"


@pytest.mark.slow
def test_corpus_without_principals(gateway, store):
    """The whole corpus, unsigned, no token, through a gateway without principals."""
    gw = gateway(_config(store))
    reqs = cc.corpus(include_reads=True)
    t0 = time.monotonic()
    run = Run(gw, store).run(reqs)
    _check(run, f"no principals ({len(reqs)} variants)", t0)


@pytest.mark.slow
@pytest.mark.parametrize("token", [None, "1"], ids=["no-token", "other-locks-token"])
def test_corpus_principal_of_another_lock(gateway, store, token):
    """Writes signed by a principal whose locks list names only another lock:
    without a token (allow_unfenced_writes true), and carrying that lock's
    valid token with allow_unfenced_writes false."""
    principal = {"name": "differ", "access_key": AK, "secret_key": SK, "locks": [OTHER]}
    fencing = {"allow_bucket_writes": False, "allow_unfenced_writes": token is None, **NO_COND}
    gw = gateway(_config(store, {"principals": [principal], "fencing": fencing}))
    extra = None
    if token:
        grant(gw, int(token), OTHER)
        extra = {"X-Fencing-Token": token, "X-Fencing-Lock": OTHER}
    reqs = cc.corpus(include_reads=False)
    t0 = time.monotonic()
    run = Run(gw, store, creds=(AK, SK), extra_headers=extra).run(reqs)
    print(f"SignatureDoesNotMatch: {len(run.bad_sig)} of {run.sent}: " +
          "; ".join(r.describe() for r in run.bad_sig[:10]))
    assert len(run.bad_sig) < run.sent // 100, "the corpus signer disagrees with the gateway's"
    _check(run, f"principal of another lock, token {token} ({len(reqs)} variants)", t0)
