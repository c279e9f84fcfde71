// fencegate: the worker library for a fencegate gateway (AWS SDK for
// JavaScript v3).  See the README's "Worker libraries" section.
export { Gateway } from "./gateway.js";
export { Lease, RELEASE_TIMEOUT_MS } from "./lease.js";
export { attachedLease, classify } from "./attach.js";
export {
  FencegateError,
  FencingError,
  FencingLeaseExpired,
  FencingTokenNotGranted,
  GatewayError,
  LeaseLost,
  LockHeld,
  MissingFencingToken,
  StaleFencingToken,
  WriteOutcomeUnknown,
} from "./errors.js";
