// The lease clock: monotonic, and a suspend of the machine counts (the
// boot-time clock, /proc/uptime, runs on while performance.now() stops).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Gateway, LeaseLost } from "../src/index.js";
import { makeClock, now, readUptime, setClockForTests } from "../src/util.js";
import { fakeGateway } from "./fake.js";

test("a suspend counts; /proc/uptime's resolution does not", () => {
  let mono = 5000;
  let up = 100; // seconds
  let wall = 1e12;
  let reads = 0;
  const clock = makeClock(() => (reads++, up), () => mono, () => wall);
  assert.equal(clock(), 5000);
  mono += 100;
  wall += 100;
  up += 0.09; // 10 ms behind: its hundredths of a second, not a suspend
  assert.equal(clock(), 5100);
  mono += 10;
  wall += 100010;
  up += 100.01; // the machine slept 100 s: performance.now() did not move, the wall clock did
  assert.ok(Math.abs(clock() - (5110 + 100000)) < 20, String(clock()));
  const t = clock();
  mono += 30;
  wall += 30;
  up -= 0.01; // a reading behind the last: never backwards
  assert.ok(clock() >= t);
  const before = reads;
  mono += 1;
  wall += 1;
  clock(); // nothing moved enough to look at /proc/uptime again
  assert.equal(reads, before);
  const plain = makeClock(() => null, () => mono); // no /proc/uptime: performance.now()
  assert.equal(plain(), mono);
});

test("the real clock reads /proc/uptime and keeps pace with performance.now()", async () => {
  const u = readUptime();
  assert.ok(u === null || (Number.isFinite(u) && u > 0), String(u));
  const t0 = now();
  const p0 = performance.now();
  await new Promise((r) => setTimeout(r, 200));
  const drift = now() - t0 - (performance.now() - p0);
  assert.ok(Math.abs(drift) < 5, String(drift));
});

let fg;
let gw;
before(async () => {
  fg = await fakeGateway();
  gw = new Gateway({ url: fg.url, credentials: null });
});
after(() => {
  setClockForTests();
  return fg.close();
});

test("a lease is lost after a host suspend longer than it, before the next write", async () => {
  fg.renew = "ok";
  let slept = 0; // seconds the fake machine was suspended
  // the wall clock moves with a suspend, performance.now() does not
  setClockForTests(makeClock(() => readUptime() + slept, undefined, () => Date.now() + slept * 1000));
  const lease = await gw.lease("suspended", { holder: "w1", leaseMs: 5000 });
  assert.equal(lease.lost, false);
  slept = 60; // the machine slept a minute; the monotonic clock saw nothing
  assert.equal(lease.lost, true);
  assert.equal(lease.reason, "expired");
  assert.throws(() => lease.check(), LeaseLost);
  setClockForTests();
});
