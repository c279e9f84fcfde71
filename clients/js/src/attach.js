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
//  - once the lease is lost, every write throws LeaseLost before anything is
//    sent, checked again before each retry attempt;
//  - the gateway's fencing refusals (409/428) come out as typed errors
//    (StaleFencingToken, ...), converted inside the retry loop: none is
//    retryable for the SDK's strategies;
//  - a refusal that names the lease's own lock and token (StaleFencingToken,
//    FencingLeaseExpired) is the gateway's judgment on it: the lease is lost,
//    its signal aborted, before the error is thrown.
//
// One lease per client: attaching another lease replaces the first.
import { LeaseLost, fencingError } from "./errors.js";

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

export function attach(lease, client) {
  const stack = client?.middlewareStack;
  if (!stack || typeof stack.add !== "function") {
    throw new TypeError("attach: an AWS SDK v3 client (with a middlewareStack) is required");
  }
  stack.remove(NAME);
  stack.remove(CHECK);
  bound.set(client, lease);

  // build: once per send, before signing and before the retry loop.
  stack.add((next, context) => async (args) => {
    const kind = classify(context.commandName);
    if (kind === "read") return next(args);
    lease.check();
    setHeader(args.request, "x-fencing-lock", lease.lock);
    if (kind === "write") setHeader(args.request, "x-fencing-token", String(lease.token));
    return next(args);
  }, { step: "build", name: NAME, tags: ["FENCEGATE"] });

  // finalizeRequest, low priority: inside the retry loop, once per attempt.
  stack.add((next, context) => async (args) => {
    if (classify(context.commandName) === "read") return next(args);
    lease.check();
    try {
      return await next(args);
    } catch (e) {
      const typed = fencingError(e);
      if (typed) {
        lease.refused(typed); // lost before the caller sees the error, if it names the lease
        throw typed;
      }
      if (lease.signal.aborted && e?.name === "AbortError") {
        throw new LeaseLost(lease.lock, lease.token, lease.reason);
      }
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
