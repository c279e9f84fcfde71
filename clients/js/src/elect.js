// gw.elect(lock, run, opts): leader election on one lock, in the manner of
// client-go's LeaderElector.
//
//  - campaigns (a long-polled acquire) until it holds the lock;
//  - onStarted(lease), then run(lease) while leading; lease.signal is run's
//    cancellation (aborted on loss, or when the election is stopped);
//  - when run returns, throws because of the loss, or the lease is lost:
//    the lease is released, onStopped(reason, lease) is called (only ever
//    after an onStarted), and it campaigns again;
//  - onNewLeader(holder, info) whenever the lock's live holder changes, this
//    process included (from the API's long poll);
//  - it stops when opts.signal aborts: a leader's lease is released (run
//    sees its signal abort) and the promise resolves once run has returned.
// The returned promise rejects only when run throws for another reason than
// the loss of its lease (a bug is not hidden by campaigning again), after
// releasing the lease and calling onStopped, or when the gateway refuses the
// campaign itself (403: this principal may not hold the lock).
import { FencingError, LeaseLost, WriteOutcomeUnknown } from "./errors.js";
import { acquireLease } from "./lease.js";
import { defaultHolder, now, sleep } from "./util.js";

/** A leader whose run returned quickly waits this long before campaigning again. */
const MIN_TERM_MS = 1000;

function isLoss(e, lease) {
  return lease.lost || e instanceof LeaseLost || e instanceof WriteOutcomeUnknown ||
    e instanceof FencingError || e?.name === "AbortError" || e?.name === "LeaseLost";
}

// Calls onNewLeader once per epoch, from the watch or from our own grant.
function leaderNotifier(onNewLeader) {
  let last = 0;
  return async (info) => {
    if (!onNewLeader || !info.holder || !(info.token > last)) return;
    last = info.token;
    try {
      await onNewLeader(info.holder, info);
    } catch {
      // a callback's failure is the callback's
    }
  };
}

async function watchLeaders(gw, lock, notify, signal) {
  try {
    for await (const info of gw.watch(lock, { signal })) {
      if (info.live) await notify(info);
    }
  } catch {
    // a watch that fails (403, ...) only costs onNewLeader its calls
  }
}

export async function elect(gw, lock, run, o = {}) {
  const { leaseMs, onStarted, onStopped, onNewLeader, signal } = o;
  const holder = o.holder ?? defaultHolder();
  const stopWatch = new AbortController();
  const onStop = () => stopWatch.abort();
  signal?.addEventListener("abort", onStop, { once: true });
  const notify = leaderNotifier(onNewLeader);
  const watcher = onNewLeader ? watchLeaders(gw, lock, notify, stopWatch.signal) : null;
  try {
    while (!signal?.aborted) {
      let lease;
      try {
        lease = await acquireLease(gw, lock, { holder, leaseMs, waitMs: Infinity, signal });
      } catch (e) {
        if (signal?.aborted) break;
        throw e;
      }
      await notify({ lock, holder, token: lease.token, live: true });
      const began = now();
      const release = () => void lease.release();
      signal?.addEventListener("abort", release, { once: true });
      let failure = null;
      try {
        if (onStarted) await onStarted(lease);
        if (!lease.lost) await run(lease);
      } catch (e) {
        if (!isLoss(e, lease)) failure = e;
      } finally {
        signal?.removeEventListener("abort", release);
        await lease.release();
        if (onStopped) {
          try {
            await onStopped(lease.reason, lease);
          } catch {
            // ignored, as onNewLeader's
          }
        }
      }
      if (failure) throw failure;
      const term = now() - began;
      if (term < MIN_TERM_MS) await sleep(MIN_TERM_MS - term, signal);
    }
  } finally {
    signal?.removeEventListener("abort", onStop);
    stopWatch.abort();
    await watcher;
  }
}
