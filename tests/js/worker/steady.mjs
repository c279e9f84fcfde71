// One lease kept through FG_DURATION_MS of steady writing (a write every 100 ms).
import { setTimeout as sleep } from "node:timers/promises";

import { PutObjectCommand } from "@aws-sdk/client-s3";

import { emit, env, errName, gateway, mono, s3 } from "./wcommon.mjs";

const gw = gateway();
const lease = await gw.lease(env.lock, { holder: env.holder, leaseMs: env.leaseMs });
const c = s3();
lease.attach(c);
const end = mono() + Number(process.env.FG_DURATION_MS);
let writes = 0;
let failed = null;
let minRemaining = Infinity;
while (mono() < end) {
  try {
    await c.send(new PutObjectCommand({ Bucket: env.bucket, Key: `${env.prefix}steady`, Body: `${lease.token} ${writes + 1}` }),
      { abortSignal: lease.signal });
    writes++;
  } catch (e) {
    failed = errName(e);
    break;
  }
  minRemaining = Math.min(minRemaining, lease.remaining());
  await sleep(100);
}
emit("done", { token: lease.token, writes, failed, lost: lease.lost, reason: lease.reason,
  renewals: lease.renewals, leaseMs: lease.leaseMs, minRemaining });
emit("release", { sent: await lease.release() });
