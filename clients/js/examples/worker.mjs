// A worker that leads on the lock "orders" and writes a report through the
// gateway every second.  Paused past its lease (a GC pause, SIGSTOP, a
// frozen container), it learns of the loss before its next write is sent, and
// campaigns again.  SIGTERM or Ctrl-C stops it; a leader gives its lease back.
//
//   FENCEGATE_URL=http://127.0.0.1:9000 BUCKET=data \
//   AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... node worker.mjs
import { setTimeout as sleep } from "node:timers/promises";

import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { FencingError, Gateway, LeaseLost, WriteOutcomeUnknown } from "fencegate";

const url = process.env.FENCEGATE_URL ?? "http://127.0.0.1:9000";
const bucket = process.env.BUCKET ?? "data";
const holder = process.env.HOLDER ?? `worker-${process.pid}`;

// Both sign with the SDK's default credentials (AWS_ACCESS_KEY_ID, ...).
const gw = new Gateway({ url });
const s3 = new S3Client({ endpoint: url, region: "us-east-1", forcePathStyle: true });

const stop = new AbortController();
process.once("SIGTERM", () => stop.abort());
process.once("SIGINT", () => stop.abort());

async function lead(lease) {
  lease.attach(s3); // every write now carries the token; refused locally once lost
  for (let n = 1; !lease.signal.aborted; n++) {
    try {
      await s3.send(new PutObjectCommand({
        Bucket: bucket, Key: "orders/report", Body: `${holder} token ${lease.token} write ${n}\n`,
      }), { abortSignal: lease.signal });
      console.log(`wrote orders/report: token ${lease.token}, write ${n}`);
    } catch (e) {
      // Not the leader any more.  WriteOutcomeUnknown: the loss cut this write
      // short after it was sent, so it may have landed; the next leader decides.
      if (e instanceof LeaseLost || e instanceof WriteOutcomeUnknown || e instanceof FencingError) return;
      throw e;
    }
    await sleep(1000, undefined, { signal: lease.signal }).catch(() => {});
  }
}

await gw.elect("orders", lead, {
  holder,
  leaseMs: Number(process.env.LEASE_MS ?? 15000),
  signal: stop.signal,
  onStarted: (lease) => console.log(`leading with token ${lease.token}`),
  onStopped: (reason) => console.log(`stopped leading: ${reason}`),
});
console.log("stopped");
