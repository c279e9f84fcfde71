// A lease whose JSON API goes through the test's relay; the test blackholes
// the relay and times the loss.  Then one write, which must be refused locally.
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { LeaseLost } from "fencegate";

import { emit, env, errName, gateway, s3 } from "./wcommon.mjs";

const gw = gateway();
const lease = await gw.lease(env.lock, { holder: env.holder, leaseMs: env.leaseMs });
const c = s3();
lease.attach(c);
emit("leased", { token: lease.token });
const reason = await new Promise((r) => lease.onLost(r));
emit("lost", { reason, renewals: lease.renewals, cause: String(lease.cause?.message ?? lease.cause) });
try {
  await c.send(new PutObjectCommand({ Bucket: env.bucket, Key: `${env.prefix}after-loss`, Body: "late" }));
  emit("write", { ok: true });
} catch (e) {
  emit("write", { ok: false, local: e instanceof LeaseLost, error: errName(e) });
}
const t0 = performance.now();
const sent = await lease.release();
emit("released", { sent, ms: performance.now() - t0 });
process.exit(0); // the blackholed connections would keep node alive
