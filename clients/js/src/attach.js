// lease.attach(s3Client): the fencing token on every write of an AWS SDK v3
// S3Client, as the gateway expects it (README "Writing through fencegate"):
//
//  - reads (Get*, Head*, List*, Select*) pass untouched, lost lease or not;
//  - multipart parts, UploadPartCopy, Complete and Abort carry the lock only
//    (X-Fencing-Lock): the gateway claims them with the epoch that created
//    the upload, so a newer leader can never commit a zombie's parts;
//  - every other command (PutObject, CopyObject, DeleteObject(s),
//    CreateMultipartUpload, tagging, ACLs...) carries X-Fencing-Token and
//    X-Fencing-Lock;
//  - once the lease is lost, a write throws LeaseLost before anything is
//    sent; the lease is checked again before each retry attempt, and a loss
//    found there, once an earlier attempt may have been sent, throws
//    WriteOutcomeUnknown (the earlier attempt may have landed), as does a
//    write in flight aborted by the loss (abortSignal: lease.signal); an
//    attempt whose connection was never made (refused, unreachable, a name
//    not resolved: an error of the connect or getaddrinfo system call) sent
//    nothing and does not count;
//  - the gateway's fencing refusals (409/428) come out as typed errors
//    (StaleFencingToken, ...), converted inside the retry loop: none is
//    retryable for the SDK's strategies;
//  - a refusal that names the lease's own lock and token (StaleFencingToken,
//    FencingLeaseExpired) is the gateway's judgment on it: the lease is lost,
//    its signal aborted, before the error is thrown.
//
// One lease per client: attaching another lease replaces the first.  A client
// made with cacheMiddleware: true is refused: smithy then keeps the handler
// stack it resolved first per command type, and attach/detach would no
// longer take effect.
//
// Where the two middlewares sit (smithy's stack, @smithy/core retry): the
// build step runs once per send, above the retry middleware (finalizeRequest,
// priority high); the check runs in finalizeRequest at priority low, below
// the retry middleware and the signer, so once per attempt.  The send's
// state (how many attempts were handed to the HTTP handler) lives in a
// WeakMap on the handler context, which is one object per send.
import { FencingError, LeaseLost, WriteOutcomeUnknown, fencingError } from "./errors.js";

const NAME = "fencegateLease";
const CHECK = "fencegateLeaseCheck";
const bound = new WeakMap(); // client -> the lease attached to it

const CONTINUATION = new Set([
  "UploadPartCommand", "UploadPartCopyCommand", "CompleteMultipartUploadCommand",
  "AbortMultipartUploadCommand",
]);

/** "read", "part" (lock header only) or "write" (token and lock) for an SDK command name. */
export function classify(commandName) {
  const n = commandName || "";
  if (/^(Get|Head|List|Select)/.test(n)) return "read";
  if (CONTINUATION.has(n)) return "part";
  return "write";
}

function setHeader(request, name, value) {
  if (request && typeof request.headers === "object") request.headers[name] = value;
}

const sends = new WeakMap(); // handler context (one per send) -> {sent: attempts that may have left}

// An HTTP handler's error that says no byte of the attempt left: its
// connection was never made.  Node's errors name the system call that failed.
export function neverConnected(e) {
  return e?.syscall === "connect" || e?.syscall === "getaddrinfo";
}

// smithy's SMITHY_CONTEXT_KEY (@smithy/types): where the send's abortSignal is.
const SMITHY_CONTEXT = "__smithy_context";

function cachingRefused() {
  return new TypeError("attach: this S3Client has cacheMiddleware: true, which keeps the " +
    "handler stack resolved at a command type's first send, so a lease could not be attached " +
    "or detached reliably; create the client without cacheMiddleware (the default, false)");
}

const lost = (lease) => new LeaseLost(lease.lock, lease.token, lease.reason);
const unknown = (lease, cause) => new WriteOutcomeUnknown(lease.lock, lease.token, lease.reason, { cause });

// An error out of the retry loop (which races its backoff and first token
// against the send's abortSignal), with the lease lost: an AbortError is the
// loss (LeaseLost if no attempt was sent, else an unknown outcome); the
// earlier attempt's error, thrown because the loss aborted the signal before
// a retry (no answer, or a 5xx), is an unknown outcome too.
function afterSend(lease, st, context, e) {
  if (e instanceof WriteOutcomeUnknown || e instanceof FencingError || e instanceof LeaseLost) return e;
  if (!lease.lost) return e;
  if (e?.name === "AbortError") return st.sent > 0 ? unknown(lease, lost(lease)) : lost(lease);
  if (st.sent === 0) return e;
  const status = e?.$metadata?.httpStatusCode;
  const answered = typeof status === "number" && status > 0 && status < 500;
  if (!answered && context?.[SMITHY_CONTEXT]?.abortSignal?.aborted) return unknown(lease, e);
  return e;
}

export function attach(lease, client) {
  const stack = client?.middlewareStack;
  if (!stack || typeof stack.add !== "function") {
    throw new TypeError("attach: an AWS SDK v3 client (with a middlewareStack) is required");
  }
  if (client.config?.cacheMiddleware === true) throw cachingRefused();
  stack.remove(NAME);
  stack.remove(CHECK);
  bound.set(client, lease);

  // build: once per send, before signing and above the retry loop.
  stack.add((next, context) => async (args) => {
    const kind = classify(context.commandName);
    if (kind === "read") return next(args);
    if (client.config?.cacheMiddleware === true) throw cachingRefused(); // turned on after attach
    lease.check(); // LeaseLost: nothing was sent
    setHeader(args.request, "x-fencing-lock", lease.lock);
    if (kind === "write") setHeader(args.request, "x-fencing-token", String(lease.token));
    const st = { sent: 0 };
    sends.set(context, st);
    try {
      return await next(args);
    } catch (e) {
      throw afterSend(lease, st, context, e);
    }
  }, { step: "build", name: NAME, tags: ["FENCEGATE"] });

  // finalizeRequest, low priority: inside the retry loop, once per attempt.
  stack.add((next, context) => async (args) => {
    if (classify(context.commandName) === "read") return next(args);
    const st = sends.get(context) ?? { sent: 0 };
    if (lease.lost) {
      // Before a retry, an earlier attempt was sent: it may have landed.
      // (The causes carry no transient error: the SDK never retries these.)
      throw st.sent > 0 ? unknown(lease, lost(lease)) : lost(lease);
    }
    st.sent++;
    try {
      return await next(args);
    } catch (e) {
      const typed = fencingError(e);
      if (typed) {
        lease.refused(typed); // lost before the caller sees the error, if it names the lease
        throw typed;
      }
      if (lease.signal.aborted && e?.name === "AbortError") {
        throw unknown(lease, lost(lease)); // handed to the HTTP handler: its body may be delivered
      }
      if (neverConnected(e)) st.sent--; // nothing of this attempt left
      throw e;
    }
  }, { step: "finalizeRequest", priority: "low", name: CHECK, tags: ["FENCEGATE"] });

  return () => detach(lease, client);
}

export function detach(lease, client) {
  if (bound.get(client) !== lease) return;
  bound.delete(client);
  client.middlewareStack.remove(NAME);
  client.middlewareStack.remove(CHECK);
}

/** The lease attached to client, or undefined. */
export function attachedLease(client) {
  return bound.get(client);
}
