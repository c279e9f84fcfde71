"""proxy_bench_report.py: the markdown tables of tests/bench/proxy_bench_dav.sh.

Input: the results file the script writes, one record a line, tab-separated:
  hz     TICKS_PER_SECOND
  wrk    CASE CONNS TARGET REPEAT RPS P50_MS P99_MS REQUESTS ERRORS CPU_TICKS [USER_TICKS]
  hwm    TARGET KIB                  peak RSS over the small-request runs
  biglabel LABEL               the big PUT's size, "1 GiB"
  big    TARGET MIB_PER_S HTTP_CODE CPU_TICKS PEAK_RSS_KIB
Targets: nginx (the peer), gw (gateway, no principals), gw_auth (gateway,
principals: SigV4 verified, fenced PUTs, re-signed).  req/s and latency are
means over the repeats; CPU per request is total CPU / total requests.
"""
import collections

TARGETS = ("nginx", "gw", "gw_auth")
NAMES = {"nginx": "nginx", "gw": "gateway", "gw_auth": "gateway+auth"}


def _ratio(a, b):
    return f"{a / b:.2f}" if b else "-"


def _load(path):
    hz, runs, hwm, big = 100, collections.defaultdict(list), {}, {"label": "1 GiB"}
    order = []
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] == "hz":
            hz = int(f[1])
        elif f[0] == "wrk":
            key = (f[1], int(f[2]))
            if key not in order:
                order.append(key)
            runs[key + (f[3],)].append(
                {"rps": float(f[5]), "p50": float(f[6]), "p99": float(f[7]), "n": int(f[8]),
                 "err": int(f[9]), "ticks": int(f[10]),
                 "uticks": int(f[11]) if len(f) > 11 else None})
        elif f[0] == "hwm":
            hwm[f[1]] = int(f[2])
        elif f[0] == "biglabel":
            big["label"] = f[1]
        elif f[0] == "big":
            big[f[1]] = {"mibs": float(f[2]), "code": f[3], "ticks": int(f[4]), "hwm": int(f[5])}
    return hz, runs, hwm, big, order


def _stats(rs, hz):
    n = sum(r["n"] for r in rs)
    return {
        "rps": sum(r["rps"] for r in rs) / len(rs),
        "p50": sum(r["p50"] for r in rs) / len(rs),
        "p99": sum(r["p99"] for r in rs) / len(rs),
        "err": sum(r["err"] for r in rs),
        "cpu": sum(r["ticks"] for r in rs) * 1e6 / hz / n if n else 0.0,
        "user": (sum(r["uticks"] for r in rs) * 1e6 / hz / n
                 if n and all(r["uticks"] is not None for r in rs) else None),
        "reps": len(rs),
    }


def report(path):
    hz, runs, hwm, big, order = _load(path)
    print("| case | conns | nginx req/s | gateway req/s | gw/nginx | gateway+auth req/s | gw+auth/nginx "
          "| CPU µs/req nginx | gateway | gw/nginx | gateway+auth | gw+auth/nginx |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    lat = []
    errs = 0
    for case, conns in order:
        s = {t: _stats(runs[(case, conns, t)], hz) for t in TARGETS if runs.get((case, conns, t))}
        if len(s) != len(TARGETS):
            continue
        n, g, a = s["nginx"], s["gw"], s["gw_auth"]
        errs += n["err"] + g["err"] + a["err"]
        print(f"| {case} | {conns} | {n['rps']:.0f} | {g['rps']:.0f} | {_ratio(g['rps'], n['rps'])} "
              f"| {a['rps']:.0f} | {_ratio(a['rps'], n['rps'])} | {n['cpu']:.1f} | {g['cpu']:.1f} "
              f"| {_ratio(g['cpu'], n['cpu'])} | {a['cpu']:.1f} | {_ratio(a['cpu'], n['cpu'])} |")
        lat.append((case, conns, s))
    print()
    print("| case | conns | p50 / p99 ms nginx | gateway | gateway+auth | errors (non-2xx + socket) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for case, conns, s in lat:
        cells = " | ".join(f"{s[t]['p50']:.2f} / {s[t]['p99']:.2f}" for t in TARGETS)
        e = "/".join(str(s[t]["err"]) for t in TARGETS)
        print(f"| {case} | {conns} | {cells} | {e} |")
    if lat and all(s[t]["user"] is not None for _, _, s in lat for t in TARGETS):
        # user space is where the targets' own code runs; the kernel's share
        # (the sockets' system calls, loopback TCP) is much the same for all
        print()
        print("| case | conns | CPU µs/req user / system nginx | gateway | gw/nginx user "
              "| gateway+auth | gw+auth/nginx user |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for case, conns, s in lat:
            us = {t: (s[t]["user"], s[t]["cpu"] - s[t]["user"]) for t in TARGETS}
            cells = {t: f"{us[t][0]:.1f} / {us[t][1]:.1f}" for t in TARGETS}
            print(f"| {case} | {conns} | {cells['nginx']} | {cells['gw']} "
                  f"| {_ratio(us['gw'][0], us['nginx'][0])} | {cells['gw_auth']} "
                  f"| {_ratio(us['gw_auth'][0], us['nginx'][0])} |")
    print()
    print("| | nginx | gateway | gw/nginx | gateway+auth | gw+auth/nginx |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    if all(t in hwm for t in TARGETS):
        m = {t: hwm[t] / 1024 for t in TARGETS}
        print(f"| peak RSS MiB, small-request runs | {m['nginx']:.1f} | {m['gw']:.1f} "
              f"| {_ratio(m['gw'], m['nginx'])} | {m['gw_auth']:.1f} | {_ratio(m['gw_auth'], m['nginx'])} |")
    if all(t in big for t in TARGETS):
        b, label = big, big["label"]
        ok = all(b[t]["code"] in ("200", "201", "204") for t in TARGETS)
        print(f"| {label} PUT MiB/s | {b['nginx']['mibs']:.0f} | {b['gw']['mibs']:.0f} "
              f"| {_ratio(b['gw']['mibs'], b['nginx']['mibs'])} | {b['gw_auth']['mibs']:.0f} "
              f"| {_ratio(b['gw_auth']['mibs'], b['nginx']['mibs'])} |")
        c = {t: b[t]["ticks"] * 1000 / hz for t in TARGETS}
        print(f"| {label} PUT proxy CPU ms | {c['nginx']:.0f} | {c['gw']:.0f} | {_ratio(c['gw'], c['nginx'])} "
              f"| {c['gw_auth']:.0f} | {_ratio(c['gw_auth'], c['nginx'])} |")
        r = {t: b[t]["hwm"] / 1024 for t in TARGETS}
        print(f"| {label} PUT peak RSS MiB | {r['nginx']:.1f} | {r['gw']:.1f} | {_ratio(r['gw'], r['nginx'])} "
              f"| {r['gw_auth']:.1f} | {_ratio(r['gw_auth'], r['nginx'])} |")
        if not ok:
            print(f"\n{label} PUT status: " + ", ".join(f"{t} {b[t]['code']}" for t in TARGETS))
    print(f"\nwrk errors over all runs: {errs}")
