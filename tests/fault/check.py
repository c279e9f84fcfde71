#!/usr/bin/python3
"""The checker of the fault-injection test: reads a run's output directory
(written by jepsen.py) and decides each property from what the real store
holds, never from what the gateway says about itself.

    check.py OUT_DIR [--json]

Inputs (all in OUT_DIR):
  run.json            the run's parameters
  workers/*.jsonl     every write attempt (intent, then outcome), acquires, renewals
  versions.json       every version of every key, listed and read straight from RGW
                      (ListObjectVersions on the versioned bucket, then a GET of each)
  fences.jsonl        GET /_fencegate/v1/fences of each gateway, polled during the run
  audit/*.json        each gateway's audit log (`fencegate audit --data-dir --json`)
  relay-*.jsonl       what each fault relay did (the margin figures; in the cond
                      modes also when each write's last byte went on to RGW)
  store-watch.jsonl   cond modes: HEADs of every key at RGW throughout the run

The cond modes (run.json "versioned": false) run on an unversioned bucket,
since RGW 16 honours conditional writes only there: versions.json holds each
key's final version only, and commit order is known from three sound
witnesses instead of a version listing:
  * the watcher: two HEADs of one key, one after the other, see its versions
    in commit order;
  * the release order: a write acknowledged 2xx was committed after the relay
    passed on its last byte ("t_last") and before its worker got the answer,
    so if A's last byte went on after B's answer came, A committed after B;
  * the final version: it committed after every acknowledged write of its key.
There, cross-key order is a known limit (a condition guards one key), and so
is an A-B-A of content the watcher proves (content-aba: the late write's
If-Match named an ETag that a newer epoch's identical bytes brought back):
both are reported, never counted as a failure; and acked-present can only be checked
through these witnesses, so it is reported as a note.

Properties (each passes or fails; the last line is "N passed, N failed"):
  versions-accounted  every stored version is a write some worker attempted, with
                      its body intact and the epoch stamp (x-amz-meta-fencing-epoch)
                      equal to the token that worker sent
  per-key-order       per key, in the store's commit order, no version of epoch e
                      after a version of a newer epoch e' > e (G1/G3)
  cross-key-order     per lock, over all its keys, by Last-Modified (ms), no version
                      of epoch e committed after a version of epoch e' > e; equal
                      milliseconds are a tie and not counted (G3)
  acked-present       every write answered 2xx is stored
  refused-absent      every write refused (4xx, 503) is not stored (G1), nor one
                      whose connection was refused (never sent)
  fences-monotonic    each gateway's highest token per lock never goes down, across
                      kill -9 and restarts too (G2)
  refusals-audited    every fencing refusal a worker saw (409 with a fencing code, 428)
                      is in the audit log of some gateway (matched by request id; a
                      repeat's "<id>.<n>" by its run's record, n up to its count),
                      and the audit has no refusal, nor occurrence of a record's
                      count, that no worker could have been given (G7)
  workload-exercised  the run did what it is meant to: writes acknowledged, epochs
                      changed on every lock, zombies (writes with a token older than
                      one already granted) were attempted, and in the cond modes a
                      write was held past the commit margin; a run that exercises
                      nothing proves nothing

Writes whose outcome is unknown (connection cut, timeout, 5xx but 503) may be
stored or not; when stored they are ordered like any other version.
"""

import argparse
import collections
import glob
import json
import os
import sys

FENCING_CODES = ("StaleFencingToken", "FencingTokenNotGranted", "FencingLeaseExpired",
                 "MissingFencingToken")
MAX_EXAMPLES = 8


def read_jsonl(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line cut by a kill: ignore
    return out


class Prop:
    def __init__(self, name, doc, limit=False):
        self.name = name
        self.doc = doc
        self.limit = limit  # a known limit: reported, never a failure
        self.violations = 0
        self.examples = []
        self.notes = []

    def bad(self, msg, n=1):
        self.violations += n
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(msg)

    @property
    def ok(self):
        return self.limit or self.violations == 0

    def as_dict(self):
        return {"name": self.name, "ok": self.ok, "violations": self.violations,
                "limit": self.limit, "examples": self.examples, "notes": self.notes}


def load(out):
    run = json.load(open(os.path.join(out, "run.json")))
    attempts = {}
    acquires = collections.defaultdict(list)  # lock -> [(t, token)]
    for path in sorted(glob.glob(os.path.join(out, "workers", "*.jsonl"))):
        for r in read_jsonl(path):
            if r.get("ev") == "write":
                a = attempts.setdefault(r["vid"], {})
                if r["phase"] == "intent":
                    for k in ("vid", "lock", "key", "epoch", "size", "g", "w", "t"):
                        a[k] = r[k]
                else:
                    a.update({k: v for k, v in r.items() if k not in ("phase", "t")})
                    a["t_done"] = r["t"]
            elif r.get("ev") == "acquire" and r.get("status") == 200:
                acquires[run["lock_of"][r["w"]]].append((r["t"], r["token"], r.get("g")))
    for a in attempts.values():
        a.setdefault("outcome", "unknown")  # the worker never said: may be either
    versions = json.load(open(os.path.join(out, "versions.json")))
    fences = read_jsonl(os.path.join(out, "fences.jsonl")) \
        if os.path.exists(os.path.join(out, "fences.jsonl")) else []
    audit = {}
    for path in sorted(glob.glob(os.path.join(out, "audit", "*.json"))):
        audit[os.path.basename(path)[:-5]] = json.load(open(path))["records"]
    relay = []
    for path in sorted(glob.glob(os.path.join(out, "relay-*.jsonl"))):
        relay.extend(read_jsonl(path))
    nemesis = read_jsonl(os.path.join(out, "nemesis.jsonl")) \
        if os.path.exists(os.path.join(out, "nemesis.jsonl")) else []
    watch = read_jsonl(os.path.join(out, "store-watch.jsonl")) \
        if os.path.exists(os.path.join(out, "store-watch.jsonl")) else []
    return run, attempts, acquires, versions, fences, audit, relay, nemesis, watch


def version_epoch(v):
    """The epoch the store holds for a version: the gateway's stamp (or, in
    bypass mode, the worker's own), else the worker's fg-epoch."""
    m = v.get("meta", {})
    e = m.get("fencing-epoch") or m.get("fg-epoch")
    return int(e) if e is not None and str(e).isdigit() else None


def make_explain(attempts, acquires, nemesis):
    """A short diagnosis of a stale version: which gateway admitted it, which
    granted the newer epoch, and what the nemesis had done to the admitting
    gateway since that grant (a restart loses what a fence table alone knows)."""
    granted = {}  # (lock, token) -> (t, gateway index)
    for lock, rs in acquires.items():
        for t, tok, g in rs:
            granted[(lock, tok)] = (t, g)
    ups = collections.defaultdict(list)
    for n in nemesis:
        if n.get("ev") in ("gw-up", "gw-resume"):
            ups[n["g"]].append((n["t"], n["ev"]))

    def explain(v, newer):
        a = attempts[v["meta"]["fg-vid"]]
        lock = a["lock"]
        t_g = granted.get((lock, newer["epoch"]))
        out = [f"admitted by g{a['g']}" if a["g"] >= 0 else "written around the gateways"]
        if t_g:
            dt = a["t"] - t_g[0]
            out.append(f"epoch {newer['epoch']} granted via g{t_g[1]} {abs(dt):.1f}s "
                       f"{'before' if dt >= 0 else 'after'} the write was sent")
        for kind, word in (("gw-up", "started"), ("gw-resume", "resumed from SIGSTOP")):
            ts = [t for t, ev in ups.get(a["g"], []) if ev == kind and t < a["t"]]
            if ts and a["t"] - ts[-1] < 30:
                out.append(f"g{a['g']} last {word} {a['t'] - ts[-1]:.1f}s before")
        return "; ".join(out)
    return explain


def per_key_unversioned(p, aba, attempts, versions, watch, relay, explain):
    """per-key-order on an unversioned bucket, from the three witnesses of the
    module docstring; each violation found is a stale version committed after
    a newer epoch's version of the same key.  One the watcher proves to be an
    A-B-A of content goes to aba instead (a known limit): the version the
    stale write overwrote has the ETag of the version that was current when
    that write was sent, so the write's If-Match named an ETag the newer epoch
    had written again (same bytes, same MD5)."""
    # The watcher: per key, samples in the order they were taken.
    top = {}
    flagged = set()
    history = collections.defaultdict(list)  # key -> [(t, vid, etag)] in sample order
    for o in sorted(watch, key=lambda o: o["t"]):
        history[o["key"]].append((o["t"], o.get("vid"), o.get("etag")))
        e = o.get("epoch_sent")
        if e is None:
            continue
        t = top.get(o["key"])
        if t is not None and e < t["epoch_sent"] and o["vid"] not in flagged:
            flagged.add(o["vid"])
            a = attempts[o["vid"]]
            # the version current when it was sent: another version than the one it
            # overwrote, with the same ETag (it came back), is an A-B-A of content
            before = [(vid, etag) for ts, vid, etag in history[o["key"]] if ts <= a["t"]]
            if aba is not None and before and before[-1][1] is not None \
                    and before[-1][1] == t.get("etag") and before[-1][0] != t["vid"]:
                aba.bad(f"{o['key']}: epoch {e} ({o['vid']}, {a['outcome']}) seen current "
                        f"{o['t'] - t['t']:.2f}s after epoch {t['epoch_sent']} ({t['vid']}), "
                        f"whose ETag {t['etag']} is the one current when it was sent "
                        f"[watcher; {explain({'meta': {'fg-vid': o['vid']}}, {'epoch': t['epoch_sent']})}]")
                continue
            p.bad(f"{o['key']}: epoch {e} ({o['vid']}, {a['outcome']}) seen current "
                  f"{o['t'] - t['t']:.2f}s after epoch {t['epoch_sent']} ({t['vid']}) "
                  f"[watcher; {explain({'meta': {'fg-vid': o['vid']}}, {'epoch': t['epoch_sent']})}]")
        if t is None or e >= t["epoch_sent"]:
            top[o["key"]] = o
    # The release order of acknowledged writes.
    t_last = {r["vid"]: r["t_last"] for r in relay if "vid" in r and "t_last" in r}
    acked = collections.defaultdict(list)
    for a in attempts.values():
        if a["outcome"] == "acked":
            acked[a["key"]].append(a)
    for key, ws in sorted(acked.items()):
        for a in ws:
            if a["vid"] in flagged or a["vid"] not in t_last:
                continue
            newer = [b for b in ws if b["epoch"] > a["epoch"] and b["t_done"] < t_last[a["vid"]]]
            if newer:
                b = max(newer, key=lambda b: b["epoch"])
                flagged.add(a["vid"])
                p.bad(f"{key}: epoch {a['epoch']} ({a['vid']}, acked) reached RGW "
                      f"{t_last[a['vid']] - b['t_done']:.2f}s after epoch {b['epoch']} "
                      f"({b['vid']}) was acknowledged [release order; "
                      f"{explain({'meta': {'fg-vid': a['vid']}}, b)}]")
    # The final version.
    for v in versions:
        vid = v.get("meta", {}).get("fg-vid")
        if vid not in attempts or vid in flagged:
            continue
        e = attempts[vid]["epoch"]
        newer = [b for b in acked.get(v["key"], []) if b["epoch"] > e]
        if newer:
            b = max(newer, key=lambda b: b["epoch"])
            flagged.add(vid)
            p.bad(f"{v['key']}: the final version is epoch {e} ({vid}), committed after "
                  f"epoch {b['epoch']} ({b['vid']}, acked) [final; "
                  f"{explain({'meta': {'fg-vid': vid}}, b)}]")


def cross_key_unversioned(p, attempts, relay, lock_of_key):
    """cross-key-order on an unversioned bucket, by the release order only: an
    acknowledged write of epoch e whose last byte went on to RGW after a newer
    epoch's write of another key of its lock was acknowledged."""
    t_last = {r["vid"]: r["t_last"] for r in relay if "vid" in r and "t_last" in r}
    acked = collections.defaultdict(list)
    for a in attempts.values():
        if a["outcome"] == "acked" and a["key"] in lock_of_key:
            acked[lock_of_key[a["key"]]].append(a)
    for lock, ws in sorted(acked.items()):
        for a in ws:
            if a["vid"] not in t_last:
                continue
            newer = [b for b in ws if b["key"] != a["key"] and b["epoch"] > a["epoch"]
                     and b["t_done"] < t_last[a["vid"]]]
            if newer:
                b = max(newer, key=lambda b: b["epoch"])
                p.bad(f"{lock}: {a['key']} epoch {a['epoch']} ({a['vid']}) reached RGW "
                      f"{t_last[a['vid']] - b['t_done']:.2f}s after {b['key']} epoch "
                      f"{b['epoch']} ({b['vid']}) was acknowledged")


def _run_of(rid, by_rid):
    """The audit record of a refusal answered with rid: its own, or, for a
    repeat coalesced into a run ("BASE.n", DESIGN.md "Audit retention under a
    flood"), BASE's when 2 <= n <= its count; None when there is none."""
    if not rid:
        return None
    if rid in by_rid:
        return by_rid[rid]
    base, dot, n = rid.rpartition(".")
    if not dot or not n.isdigit() or n.startswith("0"):
        return None
    run = by_rid.get(base)
    if run is not None and 2 <= int(n) <= run.get("count", 1):
        return run
    return None


def check(out):
    run, attempts, acquires, versions, fences, audit, relay, nemesis, watch = load(out)
    props = collections.OrderedDict()
    explain = make_explain(attempts, acquires, nemesis)
    versioned = run.get("versioned", True)

    def prop(name, doc, limit=False):
        props[name] = Prop(name, doc, limit)
        return props[name]

    locks = run["locks"]
    lock_of_key = {}
    for lock in locks:
        for i in range(run["keys_per_lock"]):
            lock_of_key[f"{lock}/k{i}"] = lock

    # ---- versions-accounted
    p = prop("versions-accounted", "every stored version was attempted, intact, stamped right")
    stored = {}
    for v in versions:
        vid = v.get("meta", {}).get("fg-vid")
        if v.get("delete_marker"):
            p.bad(f"{v['key']}: delete marker {v['version_id']} (nobody deletes)")
            continue
        if vid is None or vid not in attempts:
            p.bad(f"{v['key']} version {v['version_id']}: no write attempt has vid {vid}")
            continue
        a = attempts[vid]
        if vid in stored:
            p.bad(f"{vid} stored twice ({v['key']})")
        stored[vid] = v
        if v["key"] != a["key"]:
            p.bad(f"{vid}: written to {a['key']} but stored as {v['key']}")
        if v["size"] != a["size"]:
            p.bad(f"{vid}: {a['size']} bytes sent, {v['size']} stored")
        if v["size"] > 0 and not v.get("body_ok", False):
            p.bad(f"{vid}: body does not start with its vid")
        e = version_epoch(v)
        if e != a["epoch"]:
            p.bad(f"{vid}: sent with token {a['epoch']}, stored with epoch stamp {e}")
        v["epoch"] = a["epoch"]  # the token it was sent with: what ordering is about
    seen = {}  # vid -> first watcher sample (cond modes)
    for o in watch:
        vid = o.get("vid")
        if vid is None or vid not in attempts:
            p.bad(f"{o['key']}: the watcher saw vid {vid}, which no write attempt has")
            continue
        a = attempts[vid]
        stamp = int(o["epoch"]) if str(o.get("epoch")).isdigit() else None
        if vid not in seen and (o["key"] != a["key"] or stamp != a["epoch"]):
            p.bad(f"{vid}: written to {a['key']} with token {a['epoch']}, seen as "
                  f"{o['key']} with epoch stamp {stamp}")
        seen.setdefault(vid, o)
        o["epoch_sent"] = a["epoch"]
    present = set(stored) | set(seen)

    # ---- per-key-order (commit order = the store's version order per key)
    p = prop("per-key-order", "per key, no older epoch committed after a newer one")
    if not versioned:
        aba = None  # only where the gateways sent conditions (mode cond)
        if run["mode"] == "cond":
            aba = prop("content-aba", "per key, a late older-epoch write let in by an If-Match "
                       "whose ETag a newer epoch's identical bytes had brought back (DESIGN "
                       "\"Conditional writes\": on the margin)", limit=True)
        per_key_unversioned(p, aba, attempts, versions, watch, relay, explain)
    by_key = collections.defaultdict(list)
    for v in versions:
        if "epoch" in v:
            by_key[v["key"]].append(v)
    lm_disagree = 0
    for key, vs in sorted(by_key.items()) if versioned else ():
        vs.sort(key=lambda v: v["order"])  # 0 = oldest
        top = None
        for i, v in enumerate(vs):
            if i and v["last_modified_ms"] < vs[i - 1]["last_modified_ms"]:
                lm_disagree += 1
            if top is not None and v["epoch"] < top["epoch"]:
                a = attempts[v["meta"]["fg-vid"]]
                p.bad(f"{key}: epoch {v['epoch']} ({v['meta']['fg-vid']}, {a['outcome']}) "
                      f"committed after epoch {top['epoch']} ({top['meta']['fg-vid']}), "
                      f"{v['last_modified_ms'] - top['last_modified_ms']} ms later "
                      f"[{explain(v, top)}]")
            if top is None or v["epoch"] >= top["epoch"]:
                top = v
    if lm_disagree:
        p.notes.append(f"{lm_disagree} versions listed out of Last-Modified order (store quirk)")

    # ---- cross-key-order (per lock, by Last-Modified)
    p = prop("cross-key-order", "per lock, no older epoch committed after a newer one's version",
             limit=not versioned)
    if not versioned:
        cross_key_unversioned(p, attempts, relay, lock_of_key)
    by_lock = collections.defaultdict(list)
    for v in versions:
        if "epoch" in v and v["key"] in lock_of_key:
            by_lock[lock_of_key[v["key"]]].append(v)
    ties = 0
    for lock, vs in sorted(by_lock.items()) if versioned else ():
        vs.sort(key=lambda v: v["last_modified_ms"])
        best_before = None  # newest-epoch version with a strictly earlier Last-Modified
        i = 0
        while i < len(vs):
            j = i
            while j < len(vs) and vs[j]["last_modified_ms"] == vs[i]["last_modified_ms"]:
                j += 1
            group = vs[i:j]
            for v in group:
                if best_before is not None and v["epoch"] < best_before["epoch"]:
                    a = attempts[v["meta"]["fg-vid"]]
                    p.bad(f"{lock}: {v['key']} epoch {v['epoch']} ({v['meta']['fg-vid']}, "
                          f"{a['outcome']}) committed "
                          f"{v['last_modified_ms'] - best_before['last_modified_ms']} ms after "
                          f"{best_before['key']} epoch {best_before['epoch']} "
                          f"({best_before['meta']['fg-vid']}) [{explain(v, best_before)}]")
            if len({v["epoch"] for v in group}) > 1:
                ties += 1
            for v in group:
                if best_before is None or v["epoch"] > best_before["epoch"]:
                    best_before = v
            i = j
    if ties:
        p.notes.append(f"{ties} same-millisecond groups with mixed epochs (ties, not counted)")

    # ---- acked-present / refused-absent
    p3 = prop("acked-present", "every acknowledged write is stored")
    p4 = prop("refused-absent", "no refused write is stored")
    outcomes = collections.Counter()
    unknown_present = 0
    for vid, a in attempts.items():
        outcomes[a["outcome"]] += 1
        if a["outcome"] == "acked" and vid not in present and versioned:
            p3.bad(f"{vid} ({a['key']}, epoch {a['epoch']}, via g{a['g']}) answered "
                   f"{a.get('status')} but not stored")
        elif a["outcome"] in ("refused", "notsent") and vid in present:
            p4.bad(f"{vid} ({a['key']}, epoch {a['epoch']}, via g{a['g']}) refused "
                   f"{a.get('status')} {a.get('code')} but stored")
        elif a["outcome"] == "unknown" and vid in present:
            unknown_present += 1
    if not versioned:
        p3.notes.append(f"unversioned bucket: {sum(1 for a in attempts.values() if a['outcome'] == 'acked' and a['vid'] in present)} "
                        f"of {outcomes['acked']} acknowledged writes seen by the watcher or final; "
                        "the rest were overwritten unseen (not checkable here)")

    # ---- fences-monotonic
    p = prop("fences-monotonic", "no gateway's highest token ever goes down")
    last = {}
    for r in sorted(fences, key=lambda r: (r["g"], r["t"])):
        for lock, tok in r["fences"].items():
            k = (r["g"], lock)
            if k in last and tok < last[k][0]:
                p.bad(f"g{r['g']} {lock}: fence {last[k][0]} (life {last[k][1]}) -> {tok} "
                      f"(life {r['life']})")
            if k not in last or tok >= last[k][0]:
                last[k] = (tok, r["life"])
    polls = len(fences)

    # ---- refusals-audited
    p = prop("refusals-audited", "every fencing refusal is in an audit log")
    recs = [dict(r, gw=g) for g, rs in audit.items() for r in rs]
    by_rid = {r["request_id"]: r for r in recs if r.get("request_id")}
    seen_refusals = [a for a in attempts.values()
                     if a["outcome"] == "refused" and a.get("code") in FENCING_CODES]
    matched = set()
    uses = collections.Counter()  # occurrences of each record the workers were answered
    loose = collections.Counter()  # (g, key, token) of refusals without a request id
    for a in seen_refusals:
        rid = a.get("request_id")
        holder = _run_of(rid, by_rid)  # not "run": that is run.json
        if holder is not None:
            matched.add(holder["request_id"])
            uses[holder["request_id"]] += 1
        elif rid:
            p.bad(f"{a['vid']} refused {a['code']} by g{a['g']} (request {rid}) not audited")
        else:
            loose[(f"gw{a['g']}", a["key"], a["epoch"])] += 1
    unknown_keys = collections.Counter((f"gw{a['g']}", a["key"], a["epoch"])
                                       for a in attempts.values() if a["outcome"] == "unknown")
    extra = 0
    for r in recs:
        # a record stands for count identical refusals (coalesced); those not
        # matched by a worker's request id must be accounted for otherwise
        left = r.get("count", 1) - uses[r.get("request_id")]
        k = (r["gw"], r.get("key"), r.get("token"))
        for _ in range(max(left, 0)):
            if loose[k] > 0:
                loose[k] -= 1
            elif unknown_keys[k] > 0:
                unknown_keys[k] -= 1  # a refusal whose answer the worker never got
                extra += 1
            else:
                p.bad(f"{r['gw']} audited {r.get('kind')} {r.get('key')} token "
                      f"{r.get('token')} (request {r.get('request_id')}, {left} of its count "
                      f"{r.get('count', 1)}) that no worker was refused")
                break
    for k, n in loose.items():
        if n > 0:
            p.bad(f"{n} refusal(s) of {k} not audited", n)
    p.notes.append(f"{len(seen_refusals)} fencing refusals seen by workers, {len(recs)} audit "
                   f"records counting {sum(r.get('count', 1) for r in recs)}, {extra} for "
                   "writes whose answer was lost")

    # ---- workload-exercised
    p = prop("workload-exercised", "the run exercised what it claims to")
    acked = outcomes["acked"]
    if acked < run.get("min_acked", 20):
        p.bad(f"only {acked} acknowledged writes")
    for lock in locks:
        n = len({t for _, t, _ in acquires.get(lock, [])})
        if n < 2:
            p.bad(f"{lock}: {n} epoch(s) granted, no hand-over exercised")
    stale_attempts = 0
    for a in attempts.values():
        newer = [t for (ta, t, _) in acquires.get(a["lock"], []) if ta < a["t"] and t > a["epoch"]]
        if newer:
            stale_attempts += 1
    if stale_attempts == 0:
        p.bad("no zombie write was ever attempted")
    if not versioned and not any(r.get("vid") and r.get("hold_ms", 0) > run["commit_margin_ms"]
                                 for r in relay):
        p.bad("no write was held past the commit margin")

    # ---- figures
    kinds = collections.Counter(n["ev"] for n in nemesis if n.get("ev", "").startswith("nem-"))
    codes = collections.Counter(a.get("code") for a in attempts.values()
                                if a["outcome"] == "refused")
    audit_kinds = collections.Counter(r.get("kind") for r in recs)
    margin = run.get("commit_margin_ms")
    delays = [r["in_to_resp_ms"] for r in relay if "in_to_resp_ms" in r]
    fig = {
        "mode": run["mode"], "gateways": run["gateways"], "workers": run["workers"],
        "duration_s": run["duration"], "window_keys": run["window_keys"],
        "attempts": len(attempts), "outcomes": dict(outcomes),
        "unknown_present": unknown_present,
        "refusal_codes": {str(k): v for k, v in codes.items()},
        "audit_kinds": dict(audit_kinds),
        "zero_length_attempts": sum(1 for a in attempts.values() if a["size"] == 0),
        "zombie_attempts": stale_attempts,
        "epochs_granted": {lock: len({t for _, t, _ in acquires.get(lock, [])}) for lock in locks},
        "versions": len(versions), "keys": len(by_key), "fence_polls": polls,
        "nemesis": dict(kinds),
        "relay_requests": len(relay),
        "relay_delayed": sum(1 for r in relay if r.get("delay_ms")),
        "relay_held": sum(1 for r in relay if r.get("hold_ms")),
        "relay_cut": sum(1 for r in relay if "cut" in r),
    }
    if not versioned:
        margin_ms = margin or 0
        fig.update({
            "conditional_writes": run.get("conditional_writes"),
            "relay_held_past_margin": sum(1 for r in relay if r.get("hold_ms", 0) > margin_ms),
            "store_watch_samples": len(watch),
            "store_refused_audited": audit_kinds.get("store_refused", 0),
            "slowdown_503": sum(1 for a in attempts.values() if a.get("status") == 503),
            "cross_key_reorders": props["cross-key-order"].violations,
        })
    if delays:
        delays.sort()
        fig["relay_in_to_resp_ms_p50_p99_max"] = [delays[len(delays) // 2],
                                                  delays[int(len(delays) * 0.99)], delays[-1]]
        if margin:
            fig["relay_over_margin"] = sum(1 for d in delays if d > margin)
    return props, fig


def report(props, fig, stream=sys.stdout):
    w = stream.write
    w(f"fault run: mode={fig['mode']} gateways={fig['gateways']} workers={fig['workers']} "
      f"duration={fig['duration_s']}s window_keys={fig['window_keys']}\n")
    w("figures: " + json.dumps(fig, sort_keys=True) + "\n")
    for p in props.values():
        word = "LIMIT" if p.limit else "PASS" if p.ok else "FAIL"
        what = "found (a known limit, not a failure)" if p.limit else "violation(s)"
        w(f"{word} {p.name}: {p.violations} {what} - {p.doc}\n")
        for n in p.notes:
            w(f"     note: {n}\n")
        for e in p.examples:
            w(f"     - {e}\n")
    passed = sum(1 for p in props.values() if p.ok)
    failed = len(props) - passed
    w(f"{passed} passed, {failed} failed\n")
    return failed


def main():
    ap = argparse.ArgumentParser(description="check a fault-injection run's output directory")
    ap.add_argument("out")
    ap.add_argument("--json", action="store_true", help="also write OUT/result.json")
    args = ap.parse_args()
    props, fig = check(args.out)
    failed = report(props, fig)
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump({"figures": fig, "properties": [p.as_dict() for p in props.values()]}, f,
                  indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
