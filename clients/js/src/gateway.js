// The gateway's JSON API (README "The election API"), signed with SigV4 when
// there are credentials, and the Gateway class users start from.
import { Sha256 } from "@aws-crypto/sha256-js";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { SignatureV4 } from "@smithy/signature-v4";

import { elect } from "./elect.js";
import { GatewayError } from "./errors.js";
import { acquireLease } from "./lease.js";
import {
  API_PREFIX, REQ_EXTRA_MS, WAIT_SLICE_MS, deadlineSignal, now, sleep, transient,
} from "./util.js";

function resolveCredentials(c) {
  if (c === null || c === false || c === "anonymous") return null;
  if (c === undefined) return "default";
  if (typeof c === "function") return c;
  if (typeof c === "object" && c.accessKeyId && c.secretAccessKey) return async () => c;
  throw new TypeError("credentials: an {accessKeyId, secretAccessKey[, sessionToken]} object, " +
    "a provider function, null (unsigned) or undefined (the SDK's default chain)");
}

export class Gateway {
  #creds; // null (unsigned), "default" (chain, resolved at first use) or a provider
  #signer = null;
  #fetch;

  /**
   * @param {object} o
   * @param {string} o.url  the gateway, e.g. "http://127.0.0.1:9000"
   * @param {object|function|null} [o.credentials]  SigV4 credentials for the
   *   JSON API (an object or a provider); omitted: the SDK's default chain,
   *   and unsigned requests if it finds none; null: unsigned requests (a
   *   gateway without principals)
   * @param {string} [o.region]  the SigV4 scope's region (the gateway ignores it)
   */
  constructor({ url, credentials, region = "us-east-1", fetch: fetchImpl } = {}) {
    if (!url) throw new TypeError("url is required");
    this.url = new URL(url);
    this.region = region;
    this.#creds = resolveCredentials(credentials);
    this.#fetch = fetchImpl ?? globalThis.fetch;
  }

  async #getSigner() {
    if (this.#creds === null) return null;
    if (this.#signer) return this.#signer;
    let provider = this.#creds;
    if (provider === "default") {
      const chain = defaultProvider();
      try {
        await chain();
        provider = chain;
      } catch {
        this.#creds = null; // no credentials anywhere: plain requests (documented)
        return null;
      }
    }
    this.#signer = new SignatureV4({
      credentials: provider, region: this.region, service: "s3", sha256: Sha256,
      uriEscapePath: false, applyChecksum: true,
    });
    return this.#signer;
  }

  /**
   * One JSON API call.  Returns {status, body} for any HTTP answer; throws
   * GatewayError (status 0) when none came (network, timeout, abort).
   */
  async call(method, path, { body, query, timeoutMs = REQ_EXTRA_MS, signal } = {}) {
    const [sig, dispose] = deadlineSignal(timeoutMs, signal);
    try {
      const text = body === undefined ? undefined : JSON.stringify(body);
      const headers = { host: this.url.host };
      if (text !== undefined) headers["content-type"] = "application/json";
      const base = this.url.pathname.replace(/\/$/, "");
      const req = {
        method, protocol: this.url.protocol, hostname: this.url.hostname,
        port: this.url.port ? Number(this.url.port) : undefined,
        path: base + path, query: query ?? {}, headers, body: text,
      };
      const signer = await this.#getSigner();
      const signed = signer ? await signer.sign(req) : req;
      const u = new URL(base + path, this.url);
      for (const [k, v] of Object.entries(query ?? {})) u.searchParams.set(k, String(v));
      const h = { ...signed.headers };
      delete h.host; // fetch sets the same value itself
      const r = await this.#fetch(u, { method, headers: h, body: text, signal: sig });
      const raw = await r.text();
      let parsed = null;
      try {
        parsed = raw ? JSON.parse(raw) : null;
      } catch {
        parsed = null;
      }
      return { status: r.status, body: parsed, raw };
    } catch (e) {
      if (e instanceof GatewayError) throw e;
      const why = sig.aborted && sig.reason ? sig.reason : e;
      throw new GatewayError(`${method} ${path}: ${why?.message ?? why}`, { cause: why });
    } finally {
      dispose();
    }
  }

  /** The lock's latest record (GET .../locks/{lock}), optionally long-polled. */
  async get(lock, { after, waitMs, signal } = {}) {
    const query = {};
    if (after) {
      query.after = String(after);
      query.wait_ms = String(waitMs ?? WAIT_SLICE_MS);
    }
    const r = await this.call("GET", `${API_PREFIX}/${encodeURIComponent(lock)}`, {
      query, signal, timeoutMs: (after ? Number(query.wait_ms) : 0) + REQ_EXTRA_MS,
    });
    if (r.status !== 200 || !r.body) {
      throw new GatewayError(`GET ${lock}: HTTP ${r.status}: ${r.raw}`, { status: r.status, body: r.body });
    }
    return r.body;
  }

  /**
   * Acquires lock and keeps it renewed in the background.
   * @param {string} lock
   * @param {object} [o]
   * @param {string} [o.holder]   who holds it (default host-pid)
   * @param {number} [o.leaseMs]  the lease (default: the gateway's)
   * @param {number} [o.waitMs]   how long to wait for a held lock: 0 (default)
   *   answers at once, Infinity waits until granted or o.signal aborts
   * @param {AbortSignal} [o.signal]  gives up waiting
   * @returns {Promise<Lease>}  throws LockHeld when still held after waitMs
   */
  lease(lock, o = {}) {
    return acquireLease(this, lock, o);
  }

  /** Runs fn(lease) holding the lock; the lease is released when fn settles. */
  async withLease(lock, o, fn) {
    if (typeof o === "function") [o, fn] = [{}, o];
    const lease = await this.lease(lock, o);
    try {
      return await fn(lease);
    } finally {
      await lease.release();
    }
  }

  /**
   * Campaigns for lock and runs run(lease) while leading (see elect.js).
   * Returns a promise that settles when o.signal aborts (or run throws).
   */
  elect(lock, run, o = {}) {
    return elect(this, lock, run, o);
  }

  /**
   * Holder changes of lock, from the API's long poll: yields the lock's
   * record ({lock, token, live, released, holder, ...}) each time its
   * token, holder or liveness changes.  Ends when o.signal aborts.
   */
  async *watch(lock, { signal } = {}) {
    let after = 0;
    let last = null;
    let failures = 0;
    while (!signal?.aborted) {
      const t0 = now();
      let info;
      try {
        info = await this.get(lock, { after, signal });
        failures = 0;
      } catch (e) {
        if (signal?.aborted) return;
        if (!transient(e)) throw e;
        await sleep(Math.min(5000, 1000 * 2 ** failures++), signal);
        continue;
      }
      const key = `${info.token}/${info.holder}/${info.live}/${info.released}`;
      const changed = key !== last;
      last = key;
      after = info.token;
      if (changed) yield info;
      // nothing held (after 0) or an idle answer: never poll faster than once a second
      if (!changed && now() - t0 < 1000) await sleep(1000 - (now() - t0), signal);
      else if (!info.live && now() - t0 < 1000) await sleep(1000 - (now() - t0), signal);
    }
  }
}

