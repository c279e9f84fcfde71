// Shared by the JS client scripts (run by tests/integration/test_js_clients.py
// from build/js, where `make js-deps` installs the npm packages).
// Environment: FG_ENDPOINT, FG_AK, FG_SK, FG_BUCKET, FG_LOCK, FG_TOKEN,
// FG_STALE (a token older than FG_TOKEN), FG_RUN (a unique key prefix).
import { createHash, randomBytes } from "node:crypto";

export const env = {
  endpoint: process.env.FG_ENDPOINT,
  ak: process.env.FG_AK,
  sk: process.env.FG_SK,
  bucket: process.env.FG_BUCKET,
  lock: process.env.FG_LOCK,
  token: process.env.FG_TOKEN,
  stale: process.env.FG_STALE,
  run: process.env.FG_RUN,
};

export const MiB = 1024 * 1024;
export const sha256 = (b) => createHash("sha256").update(b).digest("hex");
export const rand = (n) => randomBytes(n);

export async function streamToBuffer(s) {
  const chunks = [];
  for await (const c of s) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

// Runs the named steps in order; each resolves to a detail object or throws.
// Prints one JSON line: {step: {ok, ...detail | error}}.
export async function runSteps(steps) {
  const out = {};
  for (const [name, fn] of steps) {
    const t0 = Date.now();
    try {
      out[name] = { ok: true, ms: Date.now() - t0, ...(await fn()) };
      out[name].ms = Date.now() - t0;
    } catch (e) {
      out[name] = { ok: false, ms: Date.now() - t0, error: `${e.name || e.code}: ${e.message}` };
    }
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

// Expects fn to fail; returns what the failure looked like.
export async function refused(fn) {
  try {
    await fn();
  } catch (e) {
    return {
      code: e.Code || e.code || e.name,
      status: e.$metadata?.httpStatusCode ?? e.statusCode ?? null,
    };
  }
  throw new Error("expected a refusal, the call succeeded");
}
