// Tokens on every kind of write through an attached client, then each
// fencing refusal once.  To make the gateway refuse a lease the library still
// holds, the test tells a live lease a wrong token or lock: the library then
// sends what the gateway must refuse, and the refusal comes back as its typed
// error.  (Both fields are read-only; Object.defineProperty overrides them,
// and renewals keep using the lease's own epoch.)
import { createHash, randomBytes } from "node:crypto";

import {
  CopyObjectCommand, DeleteObjectCommand, DeleteObjectsCommand, PutObjectCommand,
  S3ServiceException, UploadPartCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import {
  FencingError, FencingLeaseExpired, FencingTokenNotGranted, MissingFencingToken,
  StaleFencingToken,
} from "fencegate";

import { emit, env, errName, gateway, s3 } from "./wcommon.mjs";

const sha = (b) => createHash("sha256").update(b).digest("hex");
const gw = gateway();
const B = env.bucket;
const P = env.prefix;
const out = {};

const old = await gw.lease(env.lock, { holder: `${env.holder}-old`, leaseMs: 5000 });
await old.release();
const lease = await gw.lease(env.lock, { holder: env.holder, leaseMs: 5000 });
const c = s3();
lease.attach(c);
out.token = lease.token;
out.old = old.token;

const small = randomBytes(1000);
await c.send(new PutObjectCommand({ Bucket: B, Key: P + "put", Body: small }));
out.put = sha(small);
await c.send(new CopyObjectCommand({ Bucket: B, Key: P + "copy", CopySource: `${B}/${P}put` }));
for (const k of ["del", "multi/1", "multi/2"]) {
  await c.send(new PutObjectCommand({ Bucket: B, Key: P + k, Body: k }));
}
await c.send(new DeleteObjectCommand({ Bucket: B, Key: P + "del" }));
const d = await c.send(new DeleteObjectsCommand({
  Bucket: B, Delete: { Objects: [{ Key: P + "multi/1" }, { Key: P + "multi/2" }] },
}));
out.deleted = (d.Deleted || []).length;
const big = randomBytes(64 * 1024 * 1024 + 17);
const t0 = performance.now();
await new Upload({ client: c, params: { Bucket: B, Key: P + "big", Body: big }, partSize: 16 * 1024 * 1024, queueSize: 2 }).done();
out.big = sha(big);
out.bigMs = Math.round(performance.now() - t0);

async function refusal(name, cls, send) {
  try {
    await send();
    out[name] = { ok: true };
  } catch (e) {
    out[name] = {
      ok: false, error: errName(e), typed: e instanceof cls, fencing: e instanceof FencingError,
      s3: e instanceof S3ServiceException, status: e.$metadata?.httpStatusCode ?? null,
      attempts: e.$metadata?.attempts ?? null, lock: e.Lock ?? null,
    };
  }
}

const tell = (l, o) => {
  for (const [k, value] of Object.entries(o)) Object.defineProperty(l, k, { value, configurable: true });
};
const token = lease.token;
tell(lease, { token: old.token });
await refusal("stale", StaleFencingToken,
  () => c.send(new PutObjectCommand({ Bucket: B, Key: P + "r-stale", Body: "x" })));
tell(lease, { token: token + 1000 });
await refusal("not_granted", FencingTokenNotGranted,
  () => c.send(new PutObjectCommand({ Bucket: B, Key: P + "r-not-granted", Body: "x" })));
tell(lease, { token });
await refusal("missing", MissingFencingToken, () => c.send(new UploadPartCommand({
  Bucket: B, Key: process.env.FG_FOREIGN_KEY, UploadId: process.env.FG_FOREIGN_UPLOAD,
  PartNumber: 1, Body: "part",
})));
// the lock's highest token, its lease released: told to a live lease on another lock
const other = await gw.lease(`${env.lock}-other`, { holder: env.holder, leaseMs: 5000 });
await lease.release();
const c2 = s3();
other.attach(c2);
tell(other, { lock: env.lock, token });
await refusal("lease_expired", FencingLeaseExpired,
  () => c2.send(new PutObjectCommand({ Bucket: B, Key: P + "r-expired", Body: "x" })));
await other.release();

// A refusal of a lease's own lock and token is the gateway's judgment on it:
// the lease is lost before the error is thrown, and the next write (to the
// same key) is refused here, unsent.  giveBack() ends a lease at the gateway
// while the library still holds it.
async function own(name, cls, lease, client, key) {
  await refusal(name, cls, () => client.send(new PutObjectCommand({ Bucket: B, Key: P + key, Body: "x" })));
  let next = "sent";
  try {
    await client.send(new PutObjectCommand({ Bucket: B, Key: P + key, Body: "y" }));
  } catch (e) {
    next = errName(e);
  }
  out[name].lease = [lease.lost, lease.reason, next];
}
const ended = await gw.lease(env.lock, { holder: env.holder, leaseMs: 30000 });
const c3 = s3();
ended.attach(c3);
await ended.giveBack();
await own("own_expired", FencingLeaseExpired, ended, c3, "r-own-expired");
const zombie = await gw.lease(env.lock, { holder: env.holder, leaseMs: 30000 });
const c4 = s3();
zombie.attach(c4);
await zombie.giveBack();
const leader = await gw.lease(env.lock, { holder: `${env.holder}-next`, leaseMs: 30000 });
const c5 = s3();
leader.attach(c5);
await c5.send(new PutObjectCommand({ Bucket: B, Key: P + "r-leader", Body: "leader" }));
await own("own_stale", StaleFencingToken, zombie, c4, "r-own-stale");
await leader.release();
emit("done", out);
