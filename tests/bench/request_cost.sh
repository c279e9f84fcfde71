#!/bin/bash
# request_cost.sh: what a small request costs the gateway, in instructions
# (callgrind), a figure the machine's other load cannot disturb; the
# wall-clock tables of make bench-proxy cannot resolve a few per cent here.
#
#   tests/bench/request_cost.sh [BIN [BASELINE_BIN]]
#
# Two gateways, as make bench-proxy runs them, in front of an nginx dav
# origin on tmpfs, each under valgrind --tool=callgrind in turn:
#   gw       no principals, no election, no fences: parse, re-sign, forward
#   gw_auth  one principal, the dir election, a fence over the bucket: every
#            request's SigV4 presigned URL is verified, a PUT carries the
#            lock's token and is fence-checked, every request is re-signed
#   nginx    the reference: nginx as make bench-proxy's plain streaming
#            reverse proxy (keep-alive upstream, no buffering), in one
#            process (master_process off) so that one callgrind sees it all
# After 200 warm-up requests, instrumentation is switched on for N GET 1 KiB
# (then N PUT 1 KiB) on one keep-alive connection.  Printed per request:
# every instruction the gateway ran (Ir), each target's count over nginx's
# (a ratio no host's system-call cost moves), and with BASELINE_BIN (another
# build, e.g. `git archive COMMIT` built alike) the same for it and the
# difference.  Note: valgrind hides the CPU's SHA extensions from OpenSSL,
# so SHA-256's share here is several times what it is on the machine.
# Environment: REQUEST_COST_N (requests per case, 1000), FENCEGATE_BIN,
# REQUEST_COST_KEEP (a directory: each run's callgrind file is kept there,
# named TARGET-CASE[-base].callgrind, for callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/bench/lib.sh
. tests/bench/lib.sh
cg_setup request_cost
BIN=${1:-${FENCEGATE_BIN:-build/fencegate}}
BASE_BIN=${2:-}
N=${REQUEST_COST_N:-1000}

AK=AKIDREQUESTCOST0001
SK=request-cost-secret-key-0000000000000000
read -r ORG_PORT GW_PORT <<<"$("$PY" "$HELPER" ports 2)"
dav_origin
UPSTREAM="\"upstream\": {\"endpoint\": \"http://127.0.0.1:$ORG_PORT\", \"region\": \"us-east-1\",
  \"addressing\": \"path\", \"access_key\": \"ORIGINIGNORESTHIS\", \"secret_key\": \"origin-ignores-this\"}"
cat >"$T/gw.json" <<JSON
{"listen": ["127.0.0.1:$GW_PORT"], "data_dir": "$T/gw-data", "log_level": "warn", "workers": 1,
 $UPSTREAM}
JSON
cat >"$T/gw_auth.json" <<JSON
{"listen": ["127.0.0.1:$GW_PORT"], "data_dir": "$T/gwa-data", "log_level": "warn", "workers": 1,
 $UPSTREAM,
 "principals": [{"name": "bench", "access_key": "$AK", "secret_key": "$SK"}],
 "election": {"backend": "dir", "path": "$T/gwa-data/election", "max_lease_ms": 3600000},
 "fences": [{"bucket": "bench", "prefix": "", "lock": "bench", "require_token": true}]}
JSON

# requests TARGET METHOD N: N requests of 1 KiB on one keep-alive connection
requests() {
    local get=/bench/obj put=/bench/put token=""
    if [ "$1" = gw_auth ]; then
        get=$("$PY" "$HELPER" presign-op get_object "http://127.0.0.1:$GW_PORT" "$AK" "$SK" bench obj)
        put=$("$PY" "$HELPER" presign-op put_object "http://127.0.0.1:$GW_PORT" "$AK" "$SK" bench put)
        token=$(cat "$T/token")
    fi
    "$PY" - "$GW_PORT" "$2" "$3" "$T/body" "$get" "$put" "$token" <<'PYEOF'
import http.client, sys, urllib.parse
port, method, n, body, get, put, token = sys.argv[1:8]
n, body = int(n), open(body, "rb").read()
path = lambda u: urllib.parse.urlsplit(u)._replace(scheme="", netloc="").geturl()
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
hdrs = {"X-Fencing-Token": token} if token else {}
for i in range(n):
    if method == "GET":
        c.request("GET", path(get))
    else:
        c.request("PUT", path(put), body=body, headers=hdrs)
    r = c.getresponse()
    r.read()
    assert r.status in (200, 201, 204), (r.status, r.read())
PYEOF
}

# measure BIN TARGET [SUFFIX]: prints "CASE Ir" per case (per request)
measure() {
    local bin=$1 target=$2 out
    rm -rf "$T/gw-data" "$T/gwa-data"
    mkdir -p "$T/gw-data" "$T/gwa-data"
    if [ "$target" = nginx ]; then
        nginx_conf peer "$GW_PORT" 1 "$(nginx_proxy_location origin)" \
            "upstream origin { server 127.0.0.1:$ORG_PORT; keepalive 128; keepalive_requests 10000000; }" \
            "master_process off;"
        cg_start "http://127.0.0.1:$GW_PORT/bench/obj" \
            "$NGINX" -p "$T/nginx-peer/" -c "$T/nginx-peer/nginx.conf" -e "$T/nginx-peer/error.log"
    else
        cg_serve "$bin" "$T/$target.json"
    fi
    if [ "$target" = gw_auth ]; then
        "$PY" "$HELPER" acquire "http://127.0.0.1:$GW_PORT/_fencegate/v1/locks/bench/acquire" \
            "$AK" "$SK" bench 3600000 >"$T/token"
    fi
    for m in GET PUT; do
        requests "$target" "$m" 200 # warm: pool, allocator, key caches, first-use paths
        out=$(cg_window "request-cost-$m" requests "$target" "$m" "$N")
        callgrind_annotate --threshold=100 "$out" 2>/dev/null | awk -v m="$m" -v n="$N" '
            /PROGRAM TOTALS/ { gsub(/,/, "", $1); printf "%s %.0f\n", m, $1 / n }'
        if [ -n "${REQUEST_COST_KEEP:-}" ]; then
            mkdir -p "$REQUEST_COST_KEEP"
            cp "$out" "$REQUEST_COST_KEEP/$target-$m${3:-}.callgrind"
        fi
        rm -f "$out"
    done
    stop_pid "$GW_PID"
    GW_PID=""
}

echo "== request cost: callgrind, $N requests per case after 200 warm-up, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "| target | case | Ir per request | over nginx |${BASE_BIN:+ baseline build | difference |}"
echo "| --- | --- | ---: | ---: |${BASE_BIN:+ ---: | ---: |}"
measure "$NGINX" nginx >"$T/nginx"
while read -r m ir; do
    echo "| nginx | $m 1 KiB | $ir | 1.00 |${BASE_BIN:+ | |}"
done <"$T/nginx"
for target in gw gw_auth; do
    measure "$BIN" "$target" >"$T/new"
    [ -z "$BASE_BIN" ] || measure "$BASE_BIN" "$target" -base >"$T/base"
    while read -r m ir; do
        ng=$(awk -v m="$m" '$1 == m { print $2 }' "$T/nginx")
        ratio=$(awk -v a="$ir" -v b="$ng" 'BEGIN { printf "%.2f", a / b }')
        if [ -n "$BASE_BIN" ]; then
            b=$(awk -v m="$m" '$1 == m { print $2 }' "$T/base")
            awk -v t="$target" -v m="$m" -v a="$ir" -v b="$b" -v r="$ratio" \
                'BEGIN { printf "| %s | %s 1 KiB | %d | %s | %d | %+.2f %% |\n", t, m, a, r, b, (a - b) * 100 / b }'
        else
            echo "| $target | $m 1 KiB | $ir | $ratio |"
        fi
    done <"$T/new"
done
