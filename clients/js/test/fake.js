// A fake gateway for the unit tests: the JSON API's lock calls (one lock
// table, leases on the real clock) and S3 writes answered 200 or with a
// fencing refusal.  Every request is recorded; `mode` switches behaviour.
import { createServer } from "node:http";

export async function fakeGateway() {
  const g = {
    requests: [], // {method, url, headers, body}
    locks: new Map(), // lock -> {token, leaseId, holder, leaseMs, expires, released}
    renew: "ok", // "ok" | "refuse" | "hang" | "503" | {status, json} | {status, xml}
    s3: null, // null: 200; else {status, code}
    s3hook: null, // async (rec, req, res) => true when it answered (or dropped) an S3 request
    hung: [],
  };
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks).toString();
    const rec = { method: req.method, url: req.url, headers: req.headers, body };
    g.requests.push(rec);
    const json = (status, o) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(o) + "\n");
    };
    const m = /^\/_fencegate\/v1\/locks\/([^/?]+)(?:\/(\w+))?/.exec(req.url);
    if (!m) {
      if (g.s3hook && await g.s3hook(rec, req, res)) return;
      if (g.s3) {
        res.writeHead(g.s3.status, { "content-type": "application/xml" });
        res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${g.s3.code}</Code>` +
          `<Message>refused</Message><Lock>${g.s3.lock ?? "orders"}</Lock>` +
          `<Token>${g.s3.token ?? 1}</Token></Error>`);
      } else {
        res.writeHead(200, { etag: '"x"', "content-type": "application/xml" });
        res.end(req.method === "POST" && req.url.includes("uploads")
          ? "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>"
          : "");
      }
      return;
    }
    const [, lock, verb] = m;
    const b = body ? JSON.parse(body) : {};
    const t = performance.now();
    let l = g.locks.get(lock);
    const live = l && !l.released && l.expires > t;
    if (verb === "acquire") {
      if (live) {
        const wait = Math.min(b.wait_ms || 0, 2000);
        await new Promise((r) => setTimeout(r, wait));
        l = g.locks.get(lock);
        if (l && !l.released && l.expires > performance.now()) {
          return json(409, { error: "held", holder: l.holder, token: l.token, expires_in_ms: 1, live: true });
        }
      }
      const leaseMs = b.lease_ms || 15000;
      const token = (l?.token ?? 0) + 1;
      const leaseId = "a".repeat(63) + (token % 10);
      g.locks.set(lock, { token, leaseId, holder: b.holder, leaseMs, expires: performance.now() + leaseMs });
      return json(200, { lock, token, lease_id: leaseId, lease_ms: leaseMs, expires_in_ms: leaseMs, holder: b.holder, live: true });
    }
    if (verb === "renew") {
      if (g.renew === "hang") {
        g.hung.push(res);
        return;
      }
      if (g.renew === "503") return json(503, { error: "backend" });
      if (g.renew?.json) return json(g.renew.status, g.renew.json);
      if (g.renew?.xml) {
        res.writeHead(g.renew.status, { "content-type": "application/xml" });
        res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${g.renew.xml}</Code>` +
          "<Message>refused</Message></Error>");
        return;
      }
      if (g.renew === "refuse" || !live || l.token !== b.token) {
        return json(409, { error: "superseded", holder: "other", token: (l?.token ?? 0) + 1, live: true });
      }
      l.expires = performance.now() + l.leaseMs;
      return json(200, { lock, token: l.token, lease_ms: l.leaseMs, expires_in_ms: l.leaseMs, live: true });
    }
    if (verb === "release") {
      if (l && l.token === b.token) l.released = true;
      return json(200, { lock, token: b.token, live: false, released: true });
    }
    if (!verb && req.method === "GET") {
      return json(200, l ? { lock, token: l.token, holder: l.holder, live, released: !!l.released } : { lock, token: 0, live: false });
    }
    json(404, { error: "not_found" });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  g.url = `http://127.0.0.1:${server.address().port}`;
  g.count = (re) => g.requests.filter((r) => re.test(`${r.method} ${r.url}`)).length;
  g.close = () => {
    for (const r of g.hung) r.destroy();
    server.closeAllConnections?.();
    return new Promise((r) => server.close(r));
  };
  return g;
}
