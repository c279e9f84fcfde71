// Worker A of the zombie story: holds the lease, writes small objects in a
// loop and has one slow streamed PUT in flight; the test SIGSTOPs it past its
// lease, lets B take over and write, then SIGCONTs it.
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";

import { PutObjectCommand } from "@aws-sdk/client-s3";
import { LeaseLost } from "fencegate";

import { emit, env, errName, gateway, s3 } from "./wcommon.mjs";

const gw = gateway();
const lease = await gw.lease(env.lock, { holder: env.holder, leaseMs: env.leaseMs });
const c = s3();
lease.attach(c);
lease.onLost((reason) => emit("lost", { reason, token: lease.token }));
emit("leased", { token: lease.token });

// The in-flight write: 64 chunks of 16 KiB, one every 100 ms (about 6 s).
const CHUNK = 16 * 1024;
const N = 64;
let settled = false;
async function* slowBody() {
  for (let i = 0; i < N && !settled; i++) {
    yield Buffer.alloc(CHUNK, 0x41 + (i % 26));
    if (i === 1) emit("inflight-started");
    await sleep(100);
  }
}
const inflight = c.send(new PutObjectCommand({
  Bucket: env.bucket, Key: `${env.prefix}inflight`, Body: Readable.from(slowBody()),
  ContentLength: CHUNK * N,
})).finally(() => {
  settled = true;
}).then(() => emit("inflight-result", { ok: true }),
  (e) => emit("inflight-result", { ok: false, error: errName(e), status: e.$metadata?.httpStatusCode ?? null }));

let n = 0;
for (;;) {
  n++;
  const key = `${env.prefix}a-${n}`;
  try {
    emit("write", { key });
    await c.send(new PutObjectCommand({ Bucket: env.bucket, Key: key, Body: `A ${lease.token} ${n}` }));
    emit("wrote", { key });
  } catch (e) {
    emit("refused", { key, error: errName(e), local: e instanceof LeaseLost, reason: e.reason ?? null,
      status: e.$metadata?.httpStatusCode ?? null });
    if (lease.lost) break;
  }
  await sleep(150);
}
await inflight;
emit("release", { sent: await lease.release() });
process.exit(0); // the abandoned body stream and pooled sockets are not the test's
