#!/bin/bash
# metrics_cost.sh: what the metrics cost a small request, in instructions
# (callgrind), a figure the machine's other load cannot disturb.  Called by
# make bench-proxy (its "metrics on against off" row) and alone:
#
#   tests/bench/metrics_cost.sh [BIN [BASELINE_BIN]]
#
# The gateway (no principals, no election, no fences: parse, re-sign,
# forward) runs under valgrind --tool=callgrind in front of an nginx dav
# origin on tmpfs; after a warm-up, instrumentation is switched on for N
# GET 1 KiB (then N PUT 1 KiB) on one keep-alive connection, and dumped.
# Reported per request:
#   total     every instruction the gateway ran (Ir)
#   metrics   instructions in the metrics code itself: self cost of every
#             gw_metrics_* and gw_histo_* function (the per-request
#             accounting, the clock reads' wrappers) -- the cost metrics
#             "off" would save, but for the clock reads: the vDSO's
#             clock_gettime is counted apart ("clock", every caller's,
#             libevent's included, so an upper bound)
# The same binary is measured again with the access log on (one JSON line per
# request to a file on tmpfs; its writer thread's instructions count too), so
# "metrics and access log on" is the second table against the first.
# With BASELINE_BIN (a build without this accounting, e.g. the commit before
# the labelled metrics) the same total is measured for it, and the difference printed.
# Environment: METRICS_COST_N (requests per case, 2000), FENCEGATE_BIN,
# METRICS_COST_KEEP (a directory: each run's callgrind file is kept there,
# named for its configuration and case, for callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/bench/lib.sh
. tests/bench/lib.sh
cg_setup metrics_cost
BIN=${1:-${FENCEGATE_BIN:-build/fencegate}}
BASE_BIN=${2:-}
N=${METRICS_COST_N:-2000}

read -r ORG_PORT GW_PORT <<<"$("$PY" "$HELPER" ports 2)"
mkdir -p "$T/gw-data"
dav_origin
# gw_config ACCESS_LOG FILE: the gateway's configuration, access_log as given
gw_config() {
    cat >"$2" <<JSON
{"listen": ["127.0.0.1:$GW_PORT"], "data_dir": "$T/gw-data", "log_level": "warn", "workers": 1,
 "access_log": "$1",
 "upstream": {"endpoint": "http://127.0.0.1:$ORG_PORT", "region": "us-east-1",
  "addressing": "path", "access_key": "ORIGINIGNORESTHIS", "secret_key": "origin-ignores-this"}}
JSON
}
gw_config off "$T/gw.json"
gw_config "$T/access.log" "$T/gw-access.json"

# requests METHOD N: N requests of 1 KiB on one keep-alive connection
requests() {
    "$PY" - "$GW_PORT" "$1" "$2" "$T/body" <<'PYEOF'
import http.client, sys
port, method, n, body = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), open(sys.argv[4], "rb").read()
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
for i in range(n):
    if method == "GET":
        c.request("GET", "/bench/obj")
    else:
        c.request("PUT", f"/bench/put-{i % 16}", body=body)
    r = c.getresponse()
    r.read()
    assert r.status in (200, 201, 204), r.status
PYEOF
}

# measure BIN [CONFIG]: prints "CASE total metrics clock" per case (Ir per request)
measure() {
    local bin=$1 cfg=${2:-$T/gw.json} out
    cg_serve "$bin" "$cfg"
    for m in GET PUT; do
        requests "$m" 200 # warm: pool, allocator, first-use paths
        out=$(cg_window "metrics-cost-$m" requests "$m" "$N")
        callgrind_annotate --threshold=100 "$out" 2>/dev/null | awk -v m="$m" -v n="$N" '
            function num(s) { gsub(/,/, "", s); return s + 0 }
            /PROGRAM TOTALS/ { total = num($1) }
            /:(gw_metrics_|gw_histo_)/ { metrics += num($1) }
            /:(__vdso_)?clock_gettime/ { clock += num($1) }
            END { printf "%s %.0f %.0f %.0f\n", m, total / n, metrics / n, clock / n }'
        if [ -n "${METRICS_COST_KEEP:-}" ]; then
            mkdir -p "$METRICS_COST_KEEP"
            cp "$out" "$METRICS_COST_KEEP/$(basename "$cfg" .json)-$m.callgrind"
        fi
        rm -f "$out"
    done
    stop_pid "$GW_PID"
    GW_PID=""
}

echo "== metrics cost: callgrind, $N requests per case after 200 warm-up, $(date -u '+%Y-%m-%d %H:%M UTC')"
measure "$BIN" >"$T/new"
measure "$BIN" "$T/gw-access.json" >"$T/access"
if [ -n "$BASE_BIN" ]; then measure "$BASE_BIN" >"$T/base"; fi
echo "| case | Ir per request | metrics code | clock_gettime, all callers | metrics code share |${BASE_BIN:+ baseline build | difference |}"
echo "| --- | ---: | ---: | ---: | ---: |${BASE_BIN:+ ---: | ---: |}"
while read -r m total metrics clock; do
    line="| $m 1 KiB | $total | $metrics | $clock | $(awk -v a="$metrics" -v c="$clock" -v t="$total" 'BEGIN { printf "%.2f %%", 100 * a / t }') |"
    if [ -n "$BASE_BIN" ]; then
        read -r _ btotal _ _ < <(grep "^$m " "$T/base")
        line="$line $btotal | $(awk -v a="$total" -v b="$btotal" 'BEGIN { printf "%+.2f %%", 100 * (a - b) / b }') |"
    fi
    echo "$line"
done <"$T/new"
echo
echo "Metrics and the access log on (access_log: a file on tmpfs), the same build:"
echo "| case | Ir per request, access log off | on | difference |"
echo "| --- | ---: | ---: | ---: |"
while read -r m total _ _; do
    read -r _ atotal _ _ < <(grep "^$m " "$T/access")
    echo "| $m 1 KiB | $total | $atotal | $(awk -v a="$atotal" -v b="$total" 'BEGIN { printf "%+.2f %%", 100 * (a - b) / b }') |"
done <"$T/new"
lines=$(wc -l <"$T/access.log" 2>/dev/null || echo 0)
echo "access log lines written: $lines"
