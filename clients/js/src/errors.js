// The library's errors.  Names match the Python library's exceptions.
//
// Local errors (LeaseLost, LockHeld, GatewayError) are plain Errors.  The
// gateway's fencing refusals subclass the SDK's S3ServiceException, so an
// existing `catch (e) { if (e instanceof S3ServiceException) ... }` or a check
// of e.name / e.$metadata.httpStatusCode keeps working.  They carry no
// $retryable trait and a 4xx status: the SDK's retry strategies never retry
// them (a refused write must not be sent again).
import { S3ServiceException } from "@aws-sdk/client-s3";

/** Base of the library's local errors. */
export class FencegateError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The lease is gone (or was never confirmed in time): nothing was sent.
 * `reason` is "superseded", "expired", "released" or "unreachable".  An
 * attached client throws it instead of a write's first attempt; a loss found
 * once an attempt was sent is a WriteOutcomeUnknown instead.
 */
export class LeaseLost extends FencegateError {
  constructor(lock, token, reason, options) {
    super(`lease on ${lock} (token ${token}) lost: ${reason}`, options);
    this.lock = lock;
    this.token = token;
    this.reason = reason;
  }
}

/**
 * The lease was lost while a write of an attached client was under way,
 * after an attempt of it had been sent: found lost before a retry (the SDK
 * retries after a reset connection, a timeout, a 5xx: the earlier attempt's
 * body may have reached the gateway), or aborted by the loss in flight
 * (`abortSignal: lease.signal`).  The write may or may not have landed: read
 * it back, or leave it to the next holder, before assuming either outcome.
 * Nothing more of the call is sent.  Not a LeaseLost ("nothing was sent" is
 * not true of this call).  `lock`, `token` and `reason` are the lost lease's;
 * `cause` is the LeaseLost, or the earlier attempt's error when the SDK
 * gave up on that one because the loss aborted its signal.
 */
export class WriteOutcomeUnknown extends FencegateError {
  constructor(lock, token, reason, options) {
    super(`lease on ${lock} (token ${token}) lost (${reason}) while a write was under way: ` +
      "an attempt of it was sent and its outcome is unknown", options);
    this.lock = lock;
    this.token = token;
    this.reason = reason;
  }
}

/** The lock is held by another holder past waitMs. */
export class LockHeld extends FencegateError {
  constructor(lock, info = {}) {
    super(`${lock} is held by "${info.holder}" (token ${info.token}, ` +
      `expires in ${info.expires_in_ms ?? "?"} ms)`);
    this.lock = lock;
    this.holder = info.holder;
    this.token = info.token;
    this.expiresInMs = info.expires_in_ms;
  }
}

/** The JSON API answered something unexpected, or could not be reached. */
export class GatewayError extends FencegateError {
  constructor(message, { status = 0, body = null, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.status = status;
    this.body = body;
  }
}

/**
 * A write the gateway refused because of its fencing token (409/428).
 * Fields from the S3 error document: Code, Lock, Token, CurrentToken.
 */
export class FencingError extends S3ServiceException {
  /** What the refusal of a lease's own token says of that lease: the reason it is lost with, or null. */
  static leaseReason = null;

  constructor(from) {
    super({
      name: new.target.name,
      $fault: "client",
      $metadata: from?.$metadata ?? {},
      message: from?.message || new.target.name,
    });
    // S3ServiceException's constructor pins its own prototype: undo that.
    Object.setPrototypeOf(this, new.target.prototype);
    for (const k of ["Code", "Lock", "Token", "CurrentToken", "RequestId", "$response"]) {
      if (from && from[k] !== undefined) this[k] = from[k];
    }
    if (from) this.cause = from;
  }
}

/** The token is lower than the lock's highest (409). */
export class StaleFencingToken extends FencingError {
  static leaseReason = "superseded";
}
/** The token is the highest, but its lease ended (409). */
export class FencingLeaseExpired extends FencingError {
  static leaseReason = "expired";
}
/** The token is above every epoch granted (409). */
export class FencingTokenNotGranted extends FencingError {}
/** A fenced write without a token (428). */
export class MissingFencingToken extends FencingError {}

export const FENCING_ERRORS = {
  StaleFencingToken,
  FencingLeaseExpired,
  FencingTokenNotGranted,
  MissingFencingToken,
};

/** Our typed error for an SDK error from the gateway's fencing, else null. */
export function fencingError(e) {
  if (!e || e instanceof FencingError) return null;
  const cls = Object.hasOwn(FENCING_ERRORS, e.name) ? FENCING_ERRORS[e.name] : null;
  return cls ? new cls(e) : null;
}
