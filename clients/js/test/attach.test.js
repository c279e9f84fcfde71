// lease.attach(s3): headers on writes, local refusal after loss, typed
// refusals that the SDK never retries.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  CompleteMultipartUploadCommand, CopyObjectCommand, CreateMultipartUploadCommand,
  DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, PutObjectCommand, S3Client,
  S3ServiceException, UploadPartCommand,
} from "@aws-sdk/client-s3";

import {
  FencingError, FencingLeaseExpired, FencingTokenNotGranted, Gateway, LeaseLost,
  MissingFencingToken, StaleFencingToken, WriteOutcomeUnknown, attachedLease, classify,
} from "../src/index.js";
import { fakeGateway } from "./fake.js";

let fg;
let gw;
before(async () => {
  fg = await fakeGateway();
  gw = new Gateway({ url: fg.url, credentials: null });
});
after(() => fg.close());

const s3 = () => new S3Client({
  endpoint: fg.url, region: "us-east-1", forcePathStyle: true,
  credentials: { accessKeyId: "AK", secretAccessKey: "SK" },
});
const last = () => fg.requests.filter((r) => !r.url.startsWith("/_fencegate/")).at(-1);
let n = 0;
const fresh = () => `a${++n}`;

test("classify: reads, multipart continuations, writes", () => {
  assert.equal(classify("GetObjectCommand"), "read");
  assert.equal(classify("HeadObjectCommand"), "read");
  assert.equal(classify("ListObjectsV2Command"), "read");
  assert.equal(classify("UploadPartCommand"), "part");
  assert.equal(classify("CompleteMultipartUploadCommand"), "part");
  assert.equal(classify("AbortMultipartUploadCommand"), "part");
  for (const w of ["PutObjectCommand", "CopyObjectCommand", "DeleteObjectCommand",
    "DeleteObjectsCommand", "CreateMultipartUploadCommand", "PutObjectTaggingCommand"]) {
    assert.equal(classify(w), "write", w);
  }
});

test("writes carry the token and lock; reads and parts as the README says", async () => {
  fg.s3 = null;
  const lock = fresh();
  const lease = await gw.lease(lock, { leaseMs: 5000 });
  const c = s3();
  lease.attach(c);
  assert.equal(attachedLease(c), lease);
  const cmds = [
    new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x" }),
    new CopyObjectCommand({ Bucket: "b", Key: "k2", CopySource: "b/k" }),
    new DeleteObjectCommand({ Bucket: "b", Key: "k" }),
    new DeleteObjectsCommand({ Bucket: "b", Delete: { Objects: [{ Key: "k" }] } }),
    new CreateMultipartUploadCommand({ Bucket: "b", Key: "m" }),
  ];
  for (const cmd of cmds) {
    await c.send(cmd).catch(() => {}); // the fake's empty answers may not parse: the request counts
    assert.equal(last().headers["x-fencing-token"], String(lease.token), cmd.constructor.name);
    assert.equal(last().headers["x-fencing-lock"], lock, cmd.constructor.name);
  }
  await c.send(new UploadPartCommand({ Bucket: "b", Key: "m", UploadId: "u1", PartNumber: 1, Body: "p" })).catch(() => {});
  assert.equal(last().headers["x-fencing-token"], undefined);
  assert.equal(last().headers["x-fencing-lock"], lock);
  await c.send(new CompleteMultipartUploadCommand({ Bucket: "b", Key: "m", UploadId: "u1",
    MultipartUpload: { Parts: [{ PartNumber: 1, ETag: "x" }] } })).catch(() => {});
  assert.equal(last().headers["x-fencing-token"], undefined);
  assert.equal(last().headers["x-fencing-lock"], lock);
  await c.send(new GetObjectCommand({ Bucket: "b", Key: "k" })).catch(() => {});
  assert.equal(last().method, "GET");
  assert.equal(last().headers["x-fencing-token"], undefined);
  assert.equal(last().headers["x-fencing-lock"], undefined);
  await lease.release();
});

test("after the loss a write throws LeaseLost and nothing is sent; reads still go", async () => {
  const lock = fresh();
  const lease = await gw.lease(lock, { leaseMs: 300 });
  const c = s3();
  lease.attach(c);
  const t = performance.now();
  while (performance.now() - t < 400) { /* stopped past the lease */ }
  const before = fg.requests.length;
  await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "late" })),
    (e) => e instanceof LeaseLost && e.reason === "expired");
  assert.equal(fg.requests.length, before, "nothing sent");
  await c.send(new GetObjectCommand({ Bucket: "b", Key: "k" })).catch(() => {});
  assert.equal(fg.requests.length, before + 1);
});

test("a newer attach replaces the older; detached, the client writes plainly", async () => {
  const a = await gw.lease(fresh(), { leaseMs: 5000 });
  const b = await gw.lease(fresh(), { leaseMs: 5000 });
  const c = s3();
  a.attach(c);
  const detachB = b.attach(c);
  await a.release(); // a is lost: c must not care
  await c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x" }));
  assert.equal(last().headers["x-fencing-lock"], b.lock);
  a.detach(c); // not a's any more: no effect
  assert.equal(attachedLease(c), b);
  detachB();
  await c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x" }));
  assert.equal(last().headers["x-fencing-token"], undefined);
  await b.release();
  await c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "after" })); // not refused
});

for (const [status, code, cls] of [
  [409, "StaleFencingToken", StaleFencingToken],
  [409, "FencingLeaseExpired", FencingLeaseExpired],
  [409, "FencingTokenNotGranted", FencingTokenNotGranted],
  [428, "MissingFencingToken", MissingFencingToken],
]) {
  test(`${status} ${code} is thrown as ${cls.name}, once, never retried`, async () => {
    const lease = await gw.lease(fresh(), { leaseMs: 5000 });
    const c = s3();
    lease.attach(c);
    fg.s3 = { status, code };
    const before = fg.count(/^PUT /);
    try {
      await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x" })), (e) => {
        assert.ok(e instanceof cls, e.name);
        assert.ok(e instanceof FencingError);
        assert.ok(e instanceof S3ServiceException);
        assert.equal(e.name, code);
        assert.equal(e.$metadata.httpStatusCode, status);
        assert.equal(e.$metadata.attempts, 1);
        assert.equal(e.Lock, "orders");
        return true;
      });
      assert.equal(fg.count(/^PUT /) - before, 1);
    } finally {
      fg.s3 = null;
      await lease.release();
    }
  });
}

test("a plain client's fencing refusal matches the typed classes by name", async () => {
  fg.s3 = { status: 409, code: "StaleFencingToken" };
  try {
    await assert.rejects(s3().send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x" })),
      (e) => e instanceof StaleFencingToken && !(e instanceof MissingFencingToken));
  } finally {
    fg.s3 = null;
  }
});

test("a send with abortSignal: lease.signal is aborted by the loss", async () => {
  const lease = await gw.lease(fresh(), { leaseMs: 5000 });
  const c = s3();
  lease.attach(c);
  // a request in flight while the lease is lost
  fg.renew = "refuse";
  const p = c.send(new PutObjectCommand({ Bucket: "b", Key: "slow", Body: "x" }), { abortSignal: lease.signal });
  await lease.renewNow();
  fg.renew = "ok";
  // lost before the attempt (nothing sent) or during it (its outcome unknown)
  await assert.rejects(p, (e) => e instanceof LeaseLost || e instanceof WriteOutcomeUnknown);
});

// The error of a write whose attempt was sent when the lease was lost.
function outcomeUnknown(lease, e) {
  assert.ok(e instanceof WriteOutcomeUnknown, `${e?.name}: ${e?.message}`);
  assert.ok(!(e instanceof LeaseLost));
  assert.equal(e.name, "WriteOutcomeUnknown");
  assert.equal(e.lock, lease.lock);
  assert.equal(e.token, lease.token);
  assert.ok(lease.reason);
  assert.equal(e.reason, lease.reason);
  assert.ok(e.cause instanceof Error);
  return true;
}
const busy = (ms) => {
  const t = performance.now();
  while (performance.now() - t < ms) { /* stopped */ }
};
const puts = (key) => fg.requests.filter((r) => r.method === "PUT" && r.url.includes(`/b/${key}`));

test("lost before a retry (body delivered, connection reset, deadline past): WriteOutcomeUnknown", async () => {
  const lease = await gw.lease(fresh(), { leaseMs: 300 });
  const c = s3();
  lease.attach(c);
  fg.s3hook = async (rec, req) => {
    if (!req.url.includes("/b/reset")) return false;
    busy(500); // the body is in; the process stalls past the lease
    req.socket.destroy(); // and the connection is reset: the SDK retries
    return true;
  };
  try {
    await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "reset", Body: "body" })),
      (e) => outcomeUnknown(lease, e) && e.cause instanceof LeaseLost);
    assert.equal(lease.reason, "expired");
    assert.deepEqual(puts("reset").map((r) => r.body), ["body"], "one attempt, its body delivered");
    // the next write sends nothing: LeaseLost
    const before = fg.requests.length;
    await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "reset2", Body: "x" })),
      (e) => e instanceof LeaseLost && e.reason === "expired");
    assert.equal(fg.requests.length, before);
  } finally {
    fg.s3hook = null;
  }
});

test("abortSignal: lease.signal, a write in flight aborted by the loss: WriteOutcomeUnknown", async () => {
  const lease = await gw.lease(fresh(), { leaseMs: 5000 });
  const c = s3();
  lease.attach(c);
  fg.s3hook = async (rec, req, res) => {
    if (!req.url.includes("/b/inflight")) return false;
    fg.hung.push(res); // the body is in; no answer yet when the lease is lost
    fg.renew = "refuse";
    await lease.renewNow();
    fg.renew = "ok";
    return true;
  };
  try {
    await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "inflight", Body: "body" }),
      { abortSignal: lease.signal }),
    (e) => outcomeUnknown(lease, e) && e.cause instanceof LeaseLost);
    assert.equal(lease.reason, "superseded");
    assert.equal(puts("inflight").length, 1);
  } finally {
    fg.s3hook = null;
    fg.renew = "ok";
  }
});

test("abortSignal: lease.signal, lost while the SDK retries a reset write: WriteOutcomeUnknown", async () => {
  for (const wait of [0, 5, 30]) {
    const lease = await gw.lease(fresh(), { leaseMs: 5000 });
    const c = s3();
    lease.attach(c);
    let first = true;
    fg.s3hook = async (rec, req, res) => {
      if (!req.url.includes("/b/retry")) return false;
      if (!first) {
        fg.hung.push(res); // a retry in flight: never answered
        return true;
      }
      first = false;
      req.socket.destroy(); // the body is in, the connection reset
      setTimeout(async () => { // then the lease is lost: before, during or after the backoff
        fg.renew = "refuse";
        await lease.renewNow();
        fg.renew = "ok";
      }, wait);
      return true;
    };
    try {
      await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "retry", Body: "body" }),
        { abortSignal: lease.signal }), (e) => outcomeUnknown(lease, e), `loss after ${wait} ms`);
      assert.equal(lease.reason, "superseded");
      assert.ok(puts("retry").length >= 1);
    } finally {
      fg.s3hook = null;
      fg.renew = "ok";
    }
  }
});

test("abortSignal: lease.signal, lost as a reset attempt fails: WriteOutcomeUnknown, cause the attempt's error", async () => {
  const lease = await gw.lease(fresh(), { leaseMs: 5000 });
  const c = s3();
  lease.attach(c);
  // the loss lands between the attempt's failure and the retry decision: the
  // SDK gives up with the attempt's error (its signal is aborted)
  c.middlewareStack.add((next) => async (args) => {
    try {
      return await next(args);
    } catch (e) {
      void lease.release(); // lost at once ("released")
      throw e;
    }
  }, { step: "finalizeRequest", priority: "normal", name: "loseOnError" });
  fg.s3hook = async (rec, req) => {
    if (!req.url.includes("/b/giveup")) return false;
    req.socket.destroy();
    return true;
  };
  try {
    await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "giveup", Body: "body" }),
      { abortSignal: lease.signal }), (e) => outcomeUnknown(lease, e) && !(e.cause instanceof LeaseLost) &&
      e.cause.code === "ECONNRESET");
    assert.equal(lease.reason, "released");
    assert.equal(puts("giveup").length, 1);
  } finally {
    fg.s3hook = null;
  }
});

// A port nothing listens on: every connect is refused.
async function deadUrl() {
  const { createServer } = await import("node:net");
  const srv = createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return `http://127.0.0.1:${port}`;
}

// Runs fn(n, error) after the n-th attempt failed in the HTTP handler
// (between the retry loop and the lease's check; not the check's own errors).
function onAttemptError(c, fn) {
  let n = 0;
  c.middlewareStack.add((next) => async (args) => {
    try {
      return await next(args);
    } catch (e) {
      if (!(e instanceof LeaseLost || e instanceof WriteOutcomeUnknown)) await fn(++n, e);
      throw e;
    }
  }, { step: "finalizeRequest", priority: "normal", name: "onAttemptError" });
}

test("lost after attempts refused at connect: LeaseLost, nothing of the write left", async () => {
  const lease = await gw.lease(fresh(), { leaseMs: 5000 });
  const c = new S3Client({
    endpoint: await deadUrl(), region: "us-east-1", forcePathStyle: true, maxAttempts: 5,
    credentials: { accessKeyId: "AK", secretAccessKey: "SK" },
  });
  lease.attach(c);
  const seen = [];
  onAttemptError(c, async (n, e) => {
    seen.push(e.code);
    if (n === 2) await lease.release(); // lost ("released") before the third attempt
  });
  await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "refused", Body: "x" })),
    (e) => e instanceof LeaseLost && !(e instanceof WriteOutcomeUnknown) && e.reason === "released");
  assert.deepEqual(seen, ["ECONNREFUSED", "ECONNREFUSED"]);
});

test("lost after a sent attempt and then a refused one: WriteOutcomeUnknown", async () => {
  const store = await fakeGateway();
  const lease = await gw.lease(fresh(), { leaseMs: 5000 });
  const c = new S3Client({
    endpoint: store.url, region: "us-east-1", forcePathStyle: true, maxAttempts: 5,
    credentials: { accessKeyId: "AK", secretAccessKey: "SK" },
  });
  lease.attach(c);
  store.s3hook = async (rec, req) => {
    req.socket.destroy(); // the body is in, the connection reset
    return true;
  };
  const seen = [];
  onAttemptError(c, async (n, e) => {
    seen.push(e.code);
    if (n === 1) await store.close(); // the next attempt is refused at connect
    if (n === 2) await lease.release();
  });
  try {
    await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "sent", Body: "body" })),
      (e) => outcomeUnknown(lease, e) && e.cause instanceof LeaseLost);
    assert.deepEqual(seen, ["ECONNRESET", "ECONNREFUSED"]);
    assert.equal(store.requests.filter((r) => r.method === "PUT").length, 1);
  } finally {
    await store.close().catch(() => {});
  }
});

test("a client with cacheMiddleware: true is refused (attach and detach would not take effect)", async () => {
  const lease = await gw.lease(fresh(), { leaseMs: 5000 });
  const cached = new S3Client({
    endpoint: fg.url, region: "us-east-1", forcePathStyle: true, cacheMiddleware: true,
    credentials: { accessKeyId: "AK", secretAccessKey: "SK" },
  });
  assert.throws(() => lease.attach(cached), (e) => e instanceof TypeError && /cacheMiddleware/.test(e.message));
  assert.equal(attachedLease(cached), undefined);
  assert.deepEqual(cached.middlewareStack.identify().filter((m) => m.startsWith("fencegate")), []);
  // turned on after attach: its writes are refused, nothing sent
  const c = s3();
  lease.attach(c);
  c.config.cacheMiddleware = true;
  const before = fg.requests.length;
  await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x" })),
    (e) => e instanceof TypeError && /cacheMiddleware/.test(e.message));
  assert.equal(fg.requests.length, before);
  await lease.release();
});

for (const [code, reason] of [["StaleFencingToken", "superseded"],
  ["FencingLeaseExpired", "expired"], ["FencingTokenNotGranted", null]]) {
  test(`${code} naming the lease's own lock and token: ${reason ?? "not"} lost before the throw`, async () => {
    const lease = await gw.lease(fresh(), { leaseMs: 5000 });
    const c = s3();
    lease.attach(c);
    const seen = [];
    lease.onLost((r) => seen.push(r));
    lease.signal.addEventListener("abort", () => seen.push("aborted"));
    fg.s3 = { status: 409, code, lock: lease.lock, token: lease.token };
    try {
      await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x" })),
        (e) => {
          seen.push("thrown");
          return e.name === code;
        });
      if (!reason) {
        assert.deepEqual(seen, ["thrown"]);
        assert.equal(lease.lost, false);
        return;
      }
      assert.deepEqual(seen, [reason, "aborted", "thrown"]);
      assert.equal(lease.reason, reason);
      const before = fg.requests.length;
      await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "y" })),
        (e) => e instanceof LeaseLost && e.reason === reason);
      assert.equal(fg.requests.length, before, "nothing sent");
    } finally {
      fg.s3 = null;
      await lease.release();
    }
  });
}

test("a refusal naming another lock or token leaves the lease held", async () => {
  const lease = await gw.lease(fresh(), { leaseMs: 5000 });
  const c = s3();
  lease.attach(c);
  try {
    for (const s3err of [{ lock: lease.lock, token: lease.token - 1 }, { lock: "other", token: lease.token }]) {
      fg.s3 = { status: 409, code: "StaleFencingToken", ...s3err };
      await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x" })),
        (e) => e instanceof StaleFencingToken);
      assert.equal(lease.lost, false);
    }
  } finally {
    fg.s3 = null;
    await lease.release();
  }
});

test("a stale refusal after the deadline passed reads expired", async () => {
  const lease = await gw.lease(fresh(), { leaseMs: 300 });
  const c = s3();
  lease.attach(c);
  fg.s3 = { status: 409, code: "StaleFencingToken", lock: lease.lock, token: lease.token };
  // paused past the deadline with the answer read and not yet handled (no
  // timer can run in between): the refusal is judged before the deadline's timer
  c.middlewareStack.add((next) => async (args) => {
    try {
      return await next(args);
    } catch (e) {
      const t = performance.now();
      while (performance.now() - t < 450) { /* stopped past the lease */ }
      throw e;
    }
  }, { step: "deserialize", priority: "high", name: "stall" });
  try {
    await assert.rejects(c.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x" })),
      (e) => e instanceof StaleFencingToken);
    assert.equal(lease.reason, "expired");
  } finally {
    fg.s3 = null;
  }
});
