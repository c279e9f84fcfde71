// One of three electors on FG_LOCK: while leading, writes its name and token
// every 200 ms.  SIGTERM stops it.
import { setTimeout as sleep } from "node:timers/promises";

import { PutObjectCommand } from "@aws-sdk/client-s3";

import { emit, env, errName, gateway, s3 } from "./wcommon.mjs";

const gw = gateway();
const c = s3();
const stop = new AbortController();
process.once("SIGTERM", () => stop.abort());

await gw.elect(env.lock, async (lease) => {
  lease.attach(c);
  while (!lease.signal.aborted) {
    try {
      await c.send(new PutObjectCommand({ Bucket: env.bucket, Key: `${env.prefix}leader`, Body: `${env.holder} ${lease.token}` }),
        { abortSignal: lease.signal });
      emit("wrote", { token: lease.token });
    } catch (e) {
      emit("write-failed", { token: lease.token, error: errName(e), lost: lease.lost });
      if (lease.lost) return;
    }
    await sleep(200, undefined, { signal: lease.signal }).catch(() => {});
  }
}, {
  holder: env.holder, leaseMs: env.leaseMs, signal: stop.signal,
  onStarted: (lease) => emit("started", { token: lease.token }),
  onStopped: (reason, lease) => emit("stopped", { token: lease.token, reason }),
  onNewLeader: (holder, info) => emit("leader", { holder, token: info.token }),
});
emit("exit");
