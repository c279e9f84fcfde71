// A lease: acquired, renewed in the background at a third of its length, and
// judged lost on the LOCAL lease clock (util.js now(): monotonic, and a
// suspend of the machine counts, from /proc/uptime), never on a
// server's answer: the lease is lost when its deadline passes without a
// confirmed renewal, whatever the network does, or at once when a renewal is
// refused or the fence refuses one of its writes as stale or expired.  The
// deadline counts from when the granting (or renewing) request was SENT, so
// it never falls after the gateway's own (DESIGN G6).
import { attach, detach } from "./attach.js";
import { GatewayError, LeaseLost, LockHeld } from "./errors.js";
import {
  API_PREFIX, REQ_EXTRA_MS, WAIT_SLICE_MS, defaultHolder, now, sleep, transient,
} from "./util.js";

/** Without leaseMs, long-polls as if the lease were this long (the gateway's default). */
const DEFAULT_SLICE_LEASE_MS = 15000;

/** release() gives up after this long (best effort). */
export const RELEASE_TIMEOUT_MS = 1000;

const asyncDispose = Symbol.asyncDispose ?? Symbol.for("nodejs.asyncDispose");

function lockPath(lock, verb) {
  return `${API_PREFIX}/${encodeURIComponent(lock)}/${verb}`;
}

/** How long an aborted acquire still waits for an answer already on its way. */
const ABORT_GRACE_MS = 250;

/** A signal that aborts ms after signal does.  Returns [signal, dispose]. */
function lateAbort(signal, ms) {
  if (!signal) return [undefined, () => {}];
  const ac = new AbortController();
  let timer = null;
  const onAbort = () => {
    timer = setTimeout(() => ac.abort(signal.reason), ms);
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  return [ac.signal, () => {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }];
}

function abortError(signal) {
  const r = signal?.reason;
  if (r instanceof Error) return r;
  const e = new Error("aborted");
  e.name = "AbortError";
  return e;
}

/**
 * POST .../acquire until granted, held past waitMs (LockHeld), aborted, or
 * refused (GatewayError).  Transport failures and 5xx are retried with a
 * backoff while waitMs lasts.
 */
export async function acquireLease(gw, lock, { holder, leaseMs, waitMs = 0, signal } = {}) {
  holder = holder ?? defaultHolder();
  const start = now();
  const total = waitMs ?? 0;
  let failures = 0;
  for (;;) {
    if (signal?.aborted) throw abortError(signal);
    const left = Math.max(0, total - (now() - start));
    // A grant's deadline counts from when its request was sent, so one
    // long-poll lasts a third of the lease at most: a grant always arrives
    // with two thirds of a lease or more still ahead on our clock.
    const slice = Math.floor(Math.min(left, WAIT_SLICE_MS, (leaseMs || DEFAULT_SLICE_LEASE_MS) / 3));
    const body = { holder, wait_ms: slice };
    if (leaseMs) body.lease_ms = Math.round(leaseMs);
    const sentAt = now();
    let r = null;
    let err = null;
    // Aborted while a grant may be on its way: wait a moment for it, so it
    // can be given back rather than left to run out.
    const [late, dispose] = lateAbort(signal, ABORT_GRACE_MS);
    try {
      r = await gw.call("POST", lockPath(lock, "acquire"), {
        body, signal: late, timeoutMs: slice + REQ_EXTRA_MS,
      });
    } catch (e) {
      err = e;
    } finally {
      dispose();
    }
    if (r && r.status === 200 && r.body?.token && r.body?.lease_id && signal?.aborted) {
      await new Lease(gw, lock, holder, r.body, sentAt).release();
      throw abortError(signal);
    }
    if (r && r.status === 200 && r.body?.token && r.body?.lease_id) {
      const lease = new Lease(gw, lock, holder, r.body, sentAt);
      if (lease.remaining() < (lease.leaseMs * 2) / 3) {
        // Granted late in a long poll: confirm now, so the caller starts
        // with most of a lease on our own clock.
        await lease.renewNow();
      }
      if (!lease.lost) return lease;
      // Granted too late to be sure of it: give it back, ask again.
      await lease.giveBack();
      if (now() - start >= total) {
        throw new GatewayError(`${lock}: granted, but the lease was ${lease.reason} before it ` +
          "could be confirmed", { status: 0 });
      }
      continue;
    }
    if (signal?.aborted) throw abortError(signal);
    const done = now() - start >= total;
    if (r && r.status === 409) {
      if (done) throw new LockHeld(lock, r.body ?? {});
      failures = 0;
      const took = now() - sentAt;
      if (took < 1000) await sleep(Math.min(1000 - took, total - (now() - start)), signal);
      continue;
    }
    const e = err ?? new GatewayError(`acquire ${lock}: HTTP ${r.status}: ${r.raw}`,
      { status: r.status, body: r.body });
    if (!transient(e) || done) throw e;
    await sleep(Math.min(5000, 250 * 2 ** failures++, total - (now() - start)), signal);
  }
}

/**
 * The loss reason for a renewal the gateway refused, or null when the answer
 * is no judgment on the lease (unavailable, timeouts, sign-in failures): 409
 * "superseded" (superseded if its token is newer than ours, else expired),
 * 404 "not_found" and 403 "denied" (no such epoch, or not ours: expired).
 */
export function refusalReason(status, body, token) {
  const err = body && typeof body === "object" ? body.error : undefined;
  if (status === 409 && err === "superseded") {
    const other = body.token;
    return Number.isInteger(other) && other > token ? "superseded" : "expired";
  }
  if ((status === 404 && err === "not_found") || (status === 403 && err === "denied")) return "expired";
  return null;
}

export class Lease {
  #gw;
  #leaseId;
  #lock;
  #token;
  #ac = new AbortController();
  #deadline = 0; // now() past which the lease may be gone
  #next = 0; // when the next renewal is due
  #renewTimer = null;
  #deadlineTimer = null;
  #renewing = null; // the renewal in flight (a promise), or null
  #failure = null; // the last renewal's transport failure, cleared by a success
  #released = null; // release()'s promise

  constructor(gw, lock, holder, grant, sentAt) {
    this.#gw = gw;
    this.#leaseId = grant.lease_id;
    this.#lock = lock;
    this.#token = grant.token;
    // lock and token are read-only: renewals and release use the private
    // copies, so nothing done to these fields can renew the wrong epoch.
    const ro = (value) => ({ value, enumerable: true, writable: false, configurable: true });
    /** The lock's name. */
    Object.defineProperty(this, "lock", ro(lock));
    /** The fencing token: the epoch granted. */
    Object.defineProperty(this, "token", ro(grant.token));
    /** Who holds it (as sent to the gateway). */
    this.holder = holder;
    /** The lease's length in ms, as granted. */
    this.leaseMs = grant.lease_ms;
    /** Aborted when the lease is lost or released; its reason is a LeaseLost. */
    this.signal = this.#ac.signal;
    /** null while held; then "superseded", "expired", "released" or "unreachable". */
    this.reason = null;
    /** What made the lease unreachable or refused (an Error or an answer), if anything. */
    this.cause = null;
    /** Confirmed renewals. */
    this.renewals = 0;
    this.#granted(sentAt, grant);
  }

  /** Whether the lease is gone (checks the local deadline first). */
  get lost() {
    this.#checkDeadline();
    return this.signal.aborted;
  }

  /** Milliseconds left on the local lease clock (0 once lost). */
  remaining() {
    if (this.lost) return 0;
    return Math.max(0, this.#deadline - now());
  }

  /** Throws LeaseLost (nothing was sent) unless the lease is held. */
  check() {
    if (this.lost) throw new LeaseLost(this.lock, this.token, this.reason);
  }

  /** Calls cb(reason, lease) once, when the lease is lost (at once if it is). */
  onLost(cb) {
    if (this.signal.aborted) queueMicrotask(() => cb(this.reason, this));
    else this.signal.addEventListener("abort", () => cb(this.reason, this), { once: true });
    return this;
  }

  /**
   * Adds this lease's token to every write of an AWS SDK v3 S3Client (see
   * attach.js); writes after the loss throw LeaseLost without being sent
   * (WriteOutcomeUnknown when the loss comes after an attempt was sent).
   * Returns a function that detaches it.
   */
  attach(s3) {
    return attach(this, s3);
  }

  /** Removes this lease's middleware from s3 (no-op if a newer lease is attached). */
  detach(s3) {
    detach(this, s3);
  }

  /**
   * Gives the lease back: the lease counts as lost ("released") at once, so
   * attached clients refuse writes; then one POST .../release, at most
   * RELEASE_TIMEOUT_MS.  Returns whether the gateway confirmed.  After a
   * loss it sends nothing and returns false at once.  Idempotent.
   */
  release() {
    this.#released ??= this.#release();
    return this.#released;
  }

  async [asyncDispose]() {
    await this.release();
  }

  toJSON() {
    return { lock: this.lock, token: this.token, holder: this.holder, leaseMs: this.leaseMs,
      reason: this.reason, remaining: Math.round(this.remaining()) };
  }

  /** Renews now (used after a late grant); resolves when answered or lost. */
  renewNow() {
    return this.#renew();
  }

  /**
   * A write refused by the fence (a FencingError, attach.js).  When it names
   * this lease's own lock and epoch, the gateway has judged the lease: lost
   * now, "superseded" (StaleFencingToken) or "expired" (FencingLeaseExpired).
   * The deadline is judged first, so a process woken from a pause past it
   * reads "expired", as its timer would say a moment later.
   */
  refused(e) {
    if (e?.Lock !== this.#lock || String(e?.Token) !== String(this.#token)) return;
    const reason = e.constructor.leaseReason;
    if (!reason || this.lost) return;
    this.cause = e;
    this.#lose(reason);
  }

  /** A release sent even though the lease is lost (a grant we could not confirm in time). */
  giveBack() {
    return this.#sendRelease();
  }

  async #release() {
    if (this.lost) return false;
    this.#lose("released");
    return this.#sendRelease();
  }

  async #sendRelease() {
    try {
      const r = await this.#gw.call("POST", lockPath(this.#lock, "release"), {
        body: { token: this.#token, lease_id: this.#leaseId }, timeoutMs: RELEASE_TIMEOUT_MS,
      });
      return r.status === 200;
    } catch {
      return false;
    }
  }

  // A grant or a renewal confirmed, for a request sent at sentAt.
  #granted(sentAt, info) {
    if (info.lease_ms) this.leaseMs = info.lease_ms;
    let lease = this.leaseMs;
    if (info.expires_in_ms > 0 && info.expires_in_ms < lease) lease = info.expires_in_ms;
    this.#deadline = sentAt + lease;
    this.#next = sentAt + lease / 3;
    this.#failure = null;
    this.#armDeadline();
    this.#armRenew(this.#next);
  }

  #armDeadline() {
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = setTimeout(() => this.#checkDeadline(), Math.max(0, this.#deadline - now()) + 1);
  }

  #armRenew(at) {
    clearTimeout(this.#renewTimer);
    this.#renewTimer = setTimeout(() => {
      this.#renewTimer = null;
      if (!this.lost && !this.#renewing) void this.#renew();
    }, Math.max(0, at - now()));
  }

  // The local deadline decides, before any timer or answer.  Lost on time
  // with a renewal failed or unanswered: "unreachable".  Noticed late (this
  // process was stopped or its event loop blocked, so it could not renew),
  // or with no renewal tried: "expired".
  #checkDeadline() {
    const t = now();
    if (this.signal.aborted || t < this.#deadline) return;
    const late = t - this.#deadline > Math.max(100, this.leaseMs / 10);
    this.#lose(!late && (this.#failure || this.#renewing) ? "unreachable" : "expired");
  }

  async #renew() {
    if (this.#renewing) return this.#renewing;
    this.#renewing = this.#renewOnce().finally(() => {
      this.#renewing = null;
    });
    return this.#renewing;
  }

  async #renewOnce() {
    if (this.lost) return;
    const sentAt = now();
    // Never wait for an answer past the deadline: the lease is judged then.
    const timeoutMs = Math.min(REQ_EXTRA_MS, this.#deadline - sentAt);
    let r = null;
    try {
      r = await this.#gw.call("POST", lockPath(this.#lock, "renew"), {
        body: { token: this.#token, lease_id: this.#leaseId }, timeoutMs, signal: this.signal,
      });
    } catch (e) {
      if (this.lost) return;
      this.#failed(e);
      return;
    }
    if (this.lost) return; // the deadline passed meanwhile: a late yes revives nothing
    if (r.status === 200 && r.body) {
      this.renewals++;
      this.#granted(sentAt, r.body);
      return;
    }
    const reason = refusalReason(r.status, r.body, this.#token);
    if (reason) {
      this.cause = r.body;
      this.#lose(reason);
      return;
    }
    // 5xx, 429, sign-in trouble (a 403 in S3 XML: RequestTimeTooSkewed,
    // SignatureDoesNotMatch, ExpiredToken), a proxy's 404...: no judgment on
    // the lease, tried again until the deadline.
    this.#failed(new GatewayError(`renew ${this.lock}: HTTP ${r.status}: ${r.raw}`,
      { status: r.status, body: r.body }));
  }

  // A renewal that may succeed if tried again: retry soon, never past the deadline.
  #failed(e) {
    this.#failure = e;
    this.cause = e;
    const delay = Math.min(1000, Math.max(100, this.leaseMs / 10));
    this.#armRenew(Math.min(now() + delay, this.#deadline));
  }

  #lose(reason) {
    if (this.signal.aborted) return;
    this.reason = reason;
    clearTimeout(this.#renewTimer);
    clearTimeout(this.#deadlineTimer);
    this.#renewTimer = this.#deadlineTimer = null;
    // The abort reason has no cause chain: the SDK's retry strategies look
    // into causes for timeouts, and a loss must never look transient.
    this.#ac.abort(new LeaseLost(this.lock, this.token, reason));
  }
}
