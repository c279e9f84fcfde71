// Lease: grant, renewal at a third, loss on the local deadline, refusal, release.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Gateway, LeaseLost, LockHeld } from "../src/index.js";
import { fakeGateway } from "./fake.js";

let fg;
let gw;
before(async () => {
  fg = await fakeGateway();
  gw = new Gateway({ url: fg.url, credentials: null });
});
after(() => fg.close());

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let n = 0;
const fresh = () => `l${++n}`;

test("a lease carries its token and is renewed at a third of its length", async () => {
  fg.renew = "ok";
  const lock = fresh();
  const lease = await gw.lease(lock, { holder: "w1", leaseMs: 600 });
  assert.equal(lease.token, 1);
  assert.equal(lease.lock, lock);
  assert.equal(lease.leaseMs, 600);
  assert.ok(lease.remaining() > 400 && lease.remaining() <= 600, String(lease.remaining()));
  await sleep(2000); // more than three leases
  assert.equal(lease.lost, false);
  assert.ok(lease.renewals >= 6, `renewals ${lease.renewals}`);
  assert.equal(await lease.release(), true);
  assert.equal(lease.reason, "released");
  assert.equal(fg.count(new RegExp(`POST /_fencegate/v1/locks/${lock}/release`)), 1);
});

test("a refused renewal loses the lease at once: superseded", async () => {
  const lock = fresh();
  const lease = await gw.lease(lock, { holder: "w1", leaseMs: 3000 });
  fg.renew = "refuse";
  const t0 = performance.now();
  await lease.renewNow();
  assert.ok(performance.now() - t0 < 500);
  assert.equal(lease.reason, "superseded");
  assert.ok(lease.signal.aborted);
  assert.ok(lease.signal.reason instanceof LeaseLost);
  assert.equal(lease.signal.reason.reason, "superseded");
  assert.throws(() => lease.check(), LeaseLost);
  const before = fg.requests.length;
  assert.equal(await lease.release(), false); // never blocks after a loss, sends nothing
  assert.equal(fg.requests.length, before);
  fg.renew = "ok";
});

for (const [answer, reason] of [
  [{ status: 409, json: { error: "superseded", holder: "other", token: 99, live: true } }, "superseded"],
  [{ status: 409, json: { error: "superseded", holder: "w1", token: 1, live: false } }, "expired"],
  [{ status: 404, json: { error: "not_found" } }, "expired"],
  [{ status: 403, json: { error: "denied" } }, "expired"],
  // sign-in trouble, in S3 XML, and answers that judge nothing: retried
  [{ status: 403, xml: "RequestTimeTooSkewed" }, null],
  [{ status: 403, xml: "SignatureDoesNotMatch" }, null],
  [{ status: 403, xml: "ExpiredToken" }, null],
  [{ status: 403, json: { error: "forbidden" } }, null],
  [{ status: 404, xml: "NoSuchKey" }, null],
  [{ status: 409, json: { error: "held" } }, null],
  [{ status: 429, json: { error: "busy" } }, null],
]) {
  const what = `${answer.status} ${answer.xml ?? answer.json.error}`;
  test(`a renewal answered ${what}: ${reason ? `lost, ${reason}` : "retried, held"}`, async () => {
    const lock = fresh();
    const lease = await gw.lease(lock, { holder: "w1", leaseMs: 3000 });
    fg.renew = answer;
    try {
      await lease.renewNow();
      assert.equal(lease.reason, reason);
      assert.equal(lease.lost, reason !== null);
      if (reason) return;
      fg.renew = "ok";
      await lease.renewNow();
      assert.equal(lease.lost, false);
      assert.equal(lease.renewals, 1);
      await lease.release();
    } finally {
      fg.renew = "ok";
    }
  });
}

test("403 sign-in failures on every renewal: retried until the deadline, then unreachable", async () => {
  const lock = fresh();
  fg.renew = { status: 403, xml: "SignatureDoesNotMatch" };
  try {
    const lease = await gw.lease(lock, { holder: "w1", leaseMs: 600 });
    await new Promise((r) => lease.onLost(r));
    assert.equal(lease.reason, "unreachable");
    assert.ok(fg.count(new RegExp(`${lock}/renew`)) >= 3);
  } finally {
    fg.renew = "ok";
  }
});

test("a renewal that hangs: the lease is lost at its local deadline, reason unreachable", async () => {
  const lock = fresh();
  fg.renew = "hang";
  const t0 = performance.now();
  const lease = await gw.lease(lock, { holder: "w1", leaseMs: 600 });
  const lostAt = await new Promise((r) => lease.onLost(() => r(performance.now())));
  const took = lostAt - t0;
  assert.equal(lease.reason, "unreachable");
  assert.ok(took >= 590 && took < 850, `lost after ${took} ms`);
  fg.renew = "ok";
});

test("5xx renewals are retried until the deadline, then unreachable", async () => {
  const lock = fresh();
  fg.renew = "503";
  const lease = await gw.lease(lock, { holder: "w1", leaseMs: 600 });
  await new Promise((r) => lease.onLost(r));
  assert.equal(lease.reason, "unreachable");
  assert.ok(fg.count(new RegExp(`${lock}/renew`)) >= 3);
  fg.renew = "ok";
});

test("a blocked event loop past the deadline (a SIGSTOP): check() refuses before any timer runs", async () => {
  const lock = fresh();
  const lease = await gw.lease(lock, { holder: "w1", leaseMs: 300 });
  const t = performance.now();
  while (performance.now() - t < 400) { /* the process is stopped */ }
  assert.throws(() => lease.check(), (e) => e instanceof LeaseLost && e.reason === "expired");
  assert.equal(lease.reason, "expired");
  assert.equal(lease.remaining(), 0);
});

test("held: LockHeld at once with waitMs 0, after waitMs otherwise", async () => {
  const lock = fresh();
  const a = await gw.lease(lock, { holder: "a", leaseMs: 5000 });
  await assert.rejects(gw.lease(lock, { holder: "b" }), (e) => e instanceof LockHeld && e.holder === "a" && e.token === 1);
  const t0 = performance.now();
  await assert.rejects(gw.lease(lock, { holder: "b", waitMs: 700 }), LockHeld);
  assert.ok(performance.now() - t0 >= 650);
  await a.release();
  const b = await gw.lease(lock, { holder: "b", waitMs: 1000 });
  assert.equal(b.token, 2);
  await b.release();
});

test("withLease releases when the body returns or throws; asyncDispose releases", async () => {
  const lock = fresh();
  let seen;
  const v = await gw.withLease(lock, { leaseMs: 2000 }, async (l) => {
    seen = l;
    return 42;
  });
  assert.equal(v, 42);
  assert.equal(seen.reason, "released");
  await assert.rejects(gw.withLease(lock, { leaseMs: 2000 }, async (l) => {
    seen = l;
    throw new Error("boom");
  }), /boom/);
  assert.equal(seen.reason, "released");
  const l = await gw.lease(lock, { leaseMs: 2000 });
  const dispose = Symbol.asyncDispose ?? Symbol.for("nodejs.asyncDispose");
  await l[dispose]();
  assert.equal(l.reason, "released");
});

test("release is bounded at about a second when the gateway hangs", async () => {
  const lock = fresh();
  const l = await gw.lease(lock, { leaseMs: 5000 });
  const hang = new Gateway({ url: fg.url, credentials: null });
  fg.renew = "ok";
  // a release that never returns: point a lease's gateway at a server that never answers
  const { createServer } = await import("node:net");
  const sinkSockets = [];
  const sink = createServer((s) => sinkSockets.push(s));
  await new Promise((r) => sink.listen(0, "127.0.0.1", r));
  const dead = new Gateway({ url: `http://127.0.0.1:${sink.address().port}`, credentials: null });
  // swap the lease's transport: a Lease talks through its own Gateway
  const lease2 = await hang.lease(fresh(), { leaseMs: 5000 });
  Object.defineProperty(dead, "x", { value: 1 });
  const t0 = performance.now();
  const call = hang.call.bind(hang);
  hang.call = (...a) => dead.call(...a);
  assert.equal(await lease2.release(), false);
  const took = performance.now() - t0;
  hang.call = call;
  assert.ok(took >= 900 && took < 1500, `release took ${took} ms`);
  await l.release();
  for (const s of sinkSockets) s.destroy();
  sink.close();
});

test("SigV4: with credentials the JSON API is signed; without, it is not", async () => {
  const lock = fresh();
  const signed = new Gateway({ url: fg.url, credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "s" } });
  const l = await signed.lease(lock, { leaseMs: 2000 });
  const r = fg.requests.filter((x) => x.url.includes(`${lock}/acquire`)).at(-1);
  assert.match(r.headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/);
  const { createHash } = await import("node:crypto");
  assert.equal(r.headers["x-amz-content-sha256"], createHash("sha256").update(r.body).digest("hex"));
  await l.release();
  const l2 = await gw.lease(lock, { leaseMs: 2000 });
  const r2 = fg.requests.filter((x) => x.url.includes(`${lock}/acquire`)).at(-1);
  assert.equal(r2.headers.authorization, undefined);
  await l2.release();
});

test("token and lock are read-only; renewals use the lease's own epoch", async () => {
  fg.renew = "ok";
  const lock = fresh();
  const lease = await gw.lease(lock, { leaseMs: 600 });
  assert.throws(() => {
    lease.token = 99;
  }, TypeError);
  Object.defineProperty(lease, "token", { value: 99 }); // what only a test would do
  await lease.renewNow();
  assert.equal(lease.lost, false);
  assert.equal(JSON.parse(fg.requests.filter((r) => r.url.includes(`${lock}/renew`)).at(-1).body).token, 1);
  await lease.release();
});
