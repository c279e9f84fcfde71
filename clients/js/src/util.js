// Small shared pieces: the lease clock, timeouts, constants.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

import { GatewayError } from "./errors.js";

export const API_PREFIX = "/_fencegate/v1/locks";
/** One acquire or watch long-poll at most this long (the gateway caps waits at 60 s). */
export const WAIT_SLICE_MS = 30000;
/** Added to a long-poll's wait for the answer to come back. */
export const REQ_EXTRA_MS = 10000;

/**
 * Seconds since boot on Linux's boot-time clock, from /proc/uptime (which
 * counts a suspend of the machine, in hundredths of a second); null where
 * there is none.
 */
export function readUptime() {
  try {
    const s = Number.parseFloat(readFileSync("/proc/uptime", "latin1"));
    return Number.isFinite(s) ? s : null;
  } catch {
    return null;
  }
}

/** /proc/uptime's resolution and more: drift below this is not a suspend. */
const SUSPEND_MIN_MS = 20;

/**
 * The lease clock: milliseconds on performance.now(), which never steps with
 * the wall clock but stops while the machine is suspended, plus every suspend
 * seen since the first reading: the boot-time clock (uptime) ran ahead of it
 * by that much.  Monotonic; without /proc/uptime, performance.now() alone.
 * Reading /proc/uptime costs tens of microseconds, so it is read again only
 * when performance.now() or the wall clock (which a suspend moves too) has
 * moved SUSPEND_MIN_MS since the last reading.
 */
export function makeClock(uptime = readUptime, mono = () => performance.now(),
  wall = () => Date.now()) {
  let base = null; // uptime (ms) less mono at the first reading
  let suspended = 0; // ms the boot-time clock gained on mono since then
  let lastMono = -Infinity;
  let lastWall = 0;
  return () => {
    const m = mono();
    const w = wall();
    if (m - lastMono < SUSPEND_MIN_MS && Math.abs(w - lastWall) < SUSPEND_MIN_MS) {
      return m + suspended;
    }
    lastMono = m;
    lastWall = w;
    const u = uptime();
    if (u !== null) {
      const ahead = u * 1000 - m;
      if (base === null) base = ahead;
      else if (ahead - base > suspended + SUSPEND_MIN_MS) suspended = ahead - base;
    }
    return m + suspended;
  };
}

let clock = makeClock();

/** Milliseconds on the lease clock (makeClock): a host suspend counts. */
export const now = () => clock();

/** Tests only: judge leases on fn (a makeClock) instead; no argument restores the real one. */
export function setClockForTests(fn = makeClock()) {
  clock = fn;
}

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

