// Small shared pieces: the monotonic clock, timeouts, constants.
import { hostname } from "node:os";

import { GatewayError } from "./errors.js";

export const API_PREFIX = "/_fencegate/v1/locks";
/** One acquire or watch long-poll at most this long (the gateway caps waits at 60 s). */
export const WAIT_SLICE_MS = 30000;
/** Added to a long-poll's wait for the answer to come back. */
export const REQ_EXTRA_MS = 10000;

/** Milliseconds on the local monotonic clock (never steps with the wall clock). */
export const now = () => performance.now();

export function defaultHolder() {
  return `${hostname() || "worker"}-${process.pid}`;
}

/**
 * An AbortSignal that fires after ms, or when any of the given signals does.
 * Returns [signal, dispose]; dispose() clears the timer and the listeners.
 */
export function deadlineSignal(ms, ...parents) {
  const ac = new AbortController();
  const onAbort = (ev) => ac.abort(ev?.target?.reason);
  const live = parents.filter(Boolean);
  for (const p of live) {
    if (p.aborted) {
      ac.abort(p.reason);
      break;
    }
    p.addEventListener("abort", onAbort, { once: true });
  }
  const timer = Number.isFinite(ms)
    ? setTimeout(() => {
      const e = new Error(`no answer within ${Math.round(ms)} ms`);
      e.name = "TimeoutError";
      ac.abort(e);
    }, Math.max(0, ms))
    : null;
  const dispose = () => {
    if (timer) clearTimeout(timer);
    for (const p of live) p.removeEventListener("abort", onAbort);
  };
  return [ac.signal, dispose];
}

/** Whether a failed API call may succeed if tried again (transport, 5xx, 429). */
export function transient(err) {
  if (!(err instanceof GatewayError)) return true;
  return err.status === 0 || err.status === 429 || err.status >= 500;
}

/** Resolves after ms, or early (without throwing) when signal aborts. */
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

