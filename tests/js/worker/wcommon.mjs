// Shared by the worker scripts that tests/integration/test_worker_js.py runs
// with the fencegate package installed from `npm pack` (build/jsclient).
// Environment: FG_URL (the gateway's JSON API), FG_S3_URL (S3 requests;
// default FG_URL), FG_AK / FG_SK (empty: a gateway without principals, the
// JSON API unsigned), FG_BUCKET, FG_LOCK, FG_LEASE_MS, FG_PREFIX, FG_HOLDER.
import { S3Client } from "@aws-sdk/client-s3";
import { Gateway } from "fencegate";

export const env = {
  url: process.env.FG_URL,
  s3url: process.env.FG_S3_URL || process.env.FG_URL,
  ak: process.env.FG_AK || "",
  sk: process.env.FG_SK || "",
  bucket: process.env.FG_BUCKET,
  lock: process.env.FG_LOCK || "orders",
  leaseMs: Number(process.env.FG_LEASE_MS || 2000),
  prefix: process.env.FG_PREFIX || "orders/js/",
  holder: process.env.FG_HOLDER || `js-${process.pid}`,
};

/** CLOCK_MONOTONIC in ms: the same clock as Python's time.monotonic(). */
export const mono = () => Number(process.hrtime.bigint()) / 1e6;

/** One JSON line per event on stdout, with the monotonic time. */
export function emit(ev, o = {}) {
  process.stdout.write(JSON.stringify({ ev, t: mono(), ...o }) + "\n");
}

export function gateway() {
  const credentials = env.ak ? { accessKeyId: env.ak, secretAccessKey: env.sk } : null;
  return new Gateway({ url: env.url, credentials });
}

export function s3(o = {}) {
  return new S3Client({
    endpoint: env.s3url, region: "us-east-1", forcePathStyle: true,
    credentials: { accessKeyId: env.ak || "anonymous", secretAccessKey: env.sk || "anonymous" },
    ...o,
  });
}

export function errName(e) {
  return e?.name || e?.code || String(e);
}
