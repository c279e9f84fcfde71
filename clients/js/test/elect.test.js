// gw.elect: onStarted, run, onStopped in order; campaigns again; stops when asked.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Gateway } from "../src/index.js";
import { fakeGateway } from "./fake.js";

let fg;
let gw;
before(async () => {
  fg = await fakeGateway();
  gw = new Gateway({ url: fg.url, credentials: null });
});
after(() => fg.close());

test("two electors: one leads at a time; the other takes over when run returns; stop", async () => {
  const events = [];
  const ac = new AbortController();
  const runner = (name) => async (lease) => {
    events.push(["run", name, lease.token]);
    await new Promise((r) => setTimeout(r, 300));
  };
  const opts = (name) => ({
    holder: name, leaseMs: 2000, signal: ac.signal,
    onStarted: (l) => events.push(["started", name, l.token]),
    onStopped: (reason, l) => events.push(["stopped", name, l.token, reason]),
    onNewLeader: (holder) => events.push(["leader", name, holder]),
  });
  const a = gw.elect("e1", runner("a"), opts("a"));
  const b = gw.elect("e1", runner("b"), opts("b"));
  await new Promise((r) => setTimeout(r, 2500));
  ac.abort();
  await Promise.all([a, b]);
  const terms = events.filter((e) => e[0] !== "leader");
  assert.ok(terms.filter((e) => e[0] === "started").length >= 2, JSON.stringify(events));
  // started/run/stopped strictly alternate: never two leaders, never a stop without a start
  let leading = null;
  for (const e of terms) {
    if (e[0] === "started") {
      assert.equal(leading, null, JSON.stringify(terms));
      leading = e[2];
    } else if (e[0] === "stopped") {
      assert.equal(leading, e[2], JSON.stringify(terms));
      assert.equal(e[3], "released");
      leading = null;
    }
  }
  assert.equal(leading, null);
  assert.ok(events.some((e) => e[0] === "leader"), "onNewLeader called");
});

test("the lease lost ends the term, onStopped gets the reason", async () => {
  const ac = new AbortController();
  const stopped = [];
  const p = gw.elect("e2", async (lease) => {
    fg.renew = "refuse";
    await lease.renewNow();
    fg.renew = "ok";
    assert.ok(lease.signal.aborted);
    ac.abort();
  }, { leaseMs: 2000, signal: ac.signal, onStopped: (reason) => stopped.push(reason) });
  await p;
  assert.deepEqual(stopped, ["superseded"]);
});

test("run throwing a bug rejects the election after releasing", async () => {
  let lease;
  await assert.rejects(gw.elect("e3", async (l) => {
    lease = l;
    throw new Error("bug");
  }, { leaseMs: 2000 }), /bug/);
  assert.equal(lease.reason, "released");
});

test("watch yields the lock's record when its holder changes, and ends on abort", async () => {
  const ac = new AbortController();
  const seen = [];
  const done = (async () => {
    for await (const info of gw.watch("w1", { signal: ac.signal })) {
      seen.push([info.token, info.holder, !!info.live]);
      if (seen.length === 3) ac.abort();
    }
  })();
  const a = await gw.lease("w1", { holder: "a", leaseMs: 5000 });
  await new Promise((r) => setTimeout(r, 1200));
  await a.release();
  const b = await gw.lease("w1", { holder: "b", leaseMs: 5000 });
  const safety = setTimeout(() => ac.abort(), 5000);
  await done;
  clearTimeout(safety);
  await b.release();
  assert.ok(seen.some((s) => s[1] === "a" && s[2]), JSON.stringify(seen));
  // then at least one change more: a's release or b's grant
  assert.ok(seen.length >= 2, JSON.stringify(seen));
});
