#!/usr/bin/env bash
# proxy_bench_dav.sh: the gateway's own cost against nginx's, in front of an
# origin cheap enough not to hide it (make bench-proxy; about 6 minutes).
#
# Everything on 127.0.0.1, everything in one tmpfs dir (/dev/shm/fg-bench.*,
# removed at exit):
#   origin   nginx with the dav module: GET and PUT on files in tmpfs
#   nginx    the peer: nginx as a streaming reverse proxy to the origin
#            (proxy_request_buffering off, proxy_buffering off, HTTP/1.1
#            keep-alive upstream pool), 1 worker
#   gw       build/fencegate serve, no principals (anonymous on loopback),
#            no election, no fences: parses, re-signs, forwards
#   gw_auth  build/fencegate serve with one principal, the dir election
#            backend and a fence rule over the whole bench bucket: every
#            request is SigV4-verified, every PUT carries a token (from the
#            election API) and is fence-checked, every request is re-signed
#            (the origin ignores the signature and the fencing metadata)
# How the load generator signs for gw_auth: wrk cannot sign per request, so
# it replays presigned URLs (X-Amz-Expires=3600, UNSIGNED-PAYLOAD, made once
# by boto3 for the gateway's Host): the gateway still parses the query,
# derives the signing key, rebuilds the canonical request and checks the
# HMAC on every request.  The token travels as X-Fencing-Token, an unsigned
# header (the gateway does not require it to be signed).  nginx and gw get
# plain URLs.
#
# Cases (wrk -t1 --latency, BENCH_SECS each, BENCH_REPEATS interleaved
# repeats, target order rotated per repeat): GET 1 KiB, PUT 1 KiB, PUT 64 KiB
# at 16 and 64 connections, GET 1 MiB at 16; then one big PUT per target
# (curl -T from tmpfs).  wrk and curl run on CPU 0, origin, nginx and both
# gateways on CPU 1 (taskset).  Measured per target: req/s, p50/p99, CPU
# µs per request (utime+stime from /proc/PID/stat of the proxy: nginx master
# + workers, the gateway's threads; then split into user and system time),
# peak RSS (VmHWM) after the small-request
# runs; for the big PUT MiB/s, CPU and VmHWM (reset first through
# /proc/PID/clear_refs).  Prints markdown tables with gateway/nginx ratios.
# Asserts nothing about speed; fails if a target answers wrongly.
#
# Environment:
#   FENCEGATE_BIN    gateway binary (build/fencegate)
#   BENCH_SECS       seconds per wrk run (5)
#   BENCH_REPEATS    interleaved repeats per case (3)
#   BENCH_CASES      "GET:1024:16 PUT:1024:64 ..." (METHOD:BYTES:CONNS) to
#                    override the case list
#   BENCH_BIG_MIB    size of the big PUT in MiB (1024; 0 skips it)
#   BENCH_PERF=SECS  after the table, perf-record gw_auth under GET 1 KiB at
#                    16 connections for SECS s; prints the top libraries and
#                    functions (perf report) and keeps the data file in
#                    build/perf-gw-auth-get-1024-c16.data
#   BENCH_PERF_CASE  METHOD:BYTES:CONNS to profile instead (GET:1024:16)
#   BENCH_PERF_CG    perf record --call-graph mode (none: flat; "dwarf,16384"
#                    for callers: the binaries have no frame pointers)
#   BENCH_SYSCALLS=SECS  after the table, strace -c gw_auth under BENCH_PERF_CASE
#                    for SECS s: system calls per request by name (a count
#                    other processes on the machine cannot disturb)
#   BENCH_METRICS_COST=0  skip the last table: metrics on against off, in
#                    instructions per small request (tests/bench/metrics_cost.sh;
#                    BENCH_METRICS_BASELINE=BIN compares with a build without them)
#   BENCH_KEEP=1     keep the temp dir
# Every process started here is stopped by PID in the EXIT trap; nothing is
# killed by name.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
unset PYTHONHOME PYTHONPATH

SECS=${BENCH_SECS:-5}
REPEATS=${BENCH_REPEATS:-3}
CASES=${BENCH_CASES:-"GET:1024:16 GET:1024:64 PUT:1024:16 PUT:1024:64 PUT:65536:16 PUT:65536:64 GET:1048576:16"}
BIG_MIB=${BENCH_BIG_MIB:-1024}
PERF_SECS=${BENCH_PERF:-0}
BIN=${FENCEGATE_BIN:-build/fencegate}
case "$BIN" in /*) ;; *) BIN=$ROOT/$BIN ;; esac
PY=/usr/bin/python3
HELPER=$ROOT/tests/bench/proxy_bench_helper.py
NGINX=${NGINX:-/usr/sbin/nginx}
HZ=$(getconf CLK_TCK)
TARGETS=(nginx gw gw_auth)
AK=AKIAFGBENCHPRINCIPAL
SK=benchbenchbenchbenchbenchbenchbenchbench
LOAD_CPU=0 SERVER_CPU=1

die() {
    echo "proxy_bench_dav: $*" >&2
    exit 1
}
note() { echo "proxy_bench_dav: $*" >&2; }

[ -x "$BIN" ] || die "$BIN not found or not executable (make, or set FENCEGATE_BIN)"
for t in "$NGINX" /usr/bin/wrk /usr/bin/curl /usr/bin/taskset "$PY"; do
    [ -x "$t" ] || die "$t missing (tests/deps.sh installs nginx-light and wrk)"
done
"$NGINX" -V 2>&1 | grep -q -- --with-http_dav_module || die "$NGINX has no dav module (nginx-light has it)"
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs (load generator on CPU 0, servers on CPU 1)"

T=$(mktemp -d /dev/shm/fg-bench.XXXXXX)
ORG_PID="" NGX_PID="" GW_PID="" GWA_PID="" PERF_PID="" STRACE_PID=""

BENCH=proxy_bench_dav.sh
# shellcheck source=tests/bench/lib.sh
. "$ROOT/tests/bench/lib.sh"
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$PERF_PID" ] && kill -0 "$PERF_PID" 2>/dev/null; then
        kill -INT "$PERF_PID" 2>/dev/null
        wait "$PERF_PID" 2>/dev/null || true
    fi
    if [ -n "$STRACE_PID" ] && kill -0 "$STRACE_PID" 2>/dev/null; then
        kill -INT "$STRACE_PID" 2>/dev/null
        wait "$STRACE_PID" 2>/dev/null || true
    fi
    stop_pid "$GWA_PID"
    stop_pid "$GW_PID"
    stop_pid "$NGX_PID"
    stop_pid "$ORG_PID"
    finish_tmp "$rc" "*.log, nginx-*/error.log"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# lib.sh: cpu_times, cpu_ticks, status_kb, nginx_pids, wait_code, wrkstats
proxy_pids() { # TARGET
    case $1 in
    nginx) nginx_pids "$NGX_PID" ;;
    gw) echo "$GW_PID" ;;
    gw_auth) echo "$GWA_PID" ;;
    esac
}
alive_check() {
    local p
    for p in "$ORG_PID" "$NGX_PID" "$GW_PID" "$GWA_PID"; do
        if ! ours "$p" || [ "$(awk '{print $3}' "/proc/$p/stat")" = Z ]; then
            die "a server died during $1 (pid $p); gw.log: $(tail -5 "$T/gw.log"); gw_auth.log: $(tail -5 "$T/gw_auth.log")"
        fi
    done
}
size_label() { # BYTES: 1 KiB, 64 KiB, 1 MiB
    if [ $(($1 % 1048576)) = 0 ]; then echo "$(($1 / 1048576)) MiB"; elif [ $(($1 % 1024)) = 0 ]; then
        echo "$(($1 / 1024)) KiB"
    else echo "$1 B"; fi
}

read -r ORG_PORT NGX_PORT GW_PORT GWA_PORT <<<"$("$PY" "$HELPER" ports 4)"
mkdir -p "$T/origin/bench" "$T/gw-data" "$T/gwa-data/election"

# ---- origin and peer: two nginx instances, each with its own prefix (lib.sh) ----
nginx_conf origin "$ORG_PORT" 1 "root $T/origin;
        location / { dav_methods PUT DELETE; create_full_put_path on; dav_access user:rw; }"
nginx_conf peer "$NGX_PORT" 1 "$(nginx_proxy_location origin)" \
    "upstream origin { server 127.0.0.1:$ORG_PORT; keepalive 128; keepalive_requests 10000000; }"
start_nginx origin "$SERVER_CPU"
ORG_PID=$!
start_nginx peer "$SERVER_CPU"
NGX_PID=$!

# ---- the two gateways ----
UPSTREAM="\"upstream\": {\"endpoint\": \"http://127.0.0.1:$ORG_PORT\", \"region\": \"us-east-1\",
    \"addressing\": \"path\", \"access_key\": \"ORIGINIGNORESTHIS\", \"secret_key\": \"origin-ignores-this\"}"
cat >"$T/gw.json" <<EOF
{"listen": ["127.0.0.1:$GW_PORT"], "data_dir": "$T/gw-data", "log_level": "warn", $UPSTREAM}
EOF
cat >"$T/gw_auth.json" <<EOF
{"listen": ["127.0.0.1:$GWA_PORT"], "data_dir": "$T/gwa-data", "log_level": "warn", $UPSTREAM,
 "principals": [{"name": "bench", "access_key": "$AK", "secret_key": "$SK"}],
 "election": {"backend": "dir", "path": "$T/gwa-data/election", "max_lease_ms": 3600000},
 "fences": [{"bucket": "bench", "prefix": "", "lock": "bench", "require_token": true}]}
EOF
taskset -c "$SERVER_CPU" "$BIN" serve -c "$T/gw.json" </dev/null >"$T/gw.log" 2>&1 &
GW_PID=$!
taskset -c "$SERVER_CPU" "$BIN" serve -c "$T/gw_auth.json" </dev/null >"$T/gw_auth.log" 2>&1 &
GWA_PID=$!

declare -A BASE=([nginx]=http://127.0.0.1:$NGX_PORT [gw]=http://127.0.0.1:$GW_PORT [gw_auth]=http://127.0.0.1:$GWA_PORT)
wait_code "http://127.0.0.1:$ORG_PORT/bench/" 403 || die "origin does not answer: $(tail -3 "$T/nginx-origin/error.log")"
wait_code "${BASE[nginx]}/bench/" 403 || die "nginx does not answer: $(tail -3 "$T/nginx-peer/error.log")"
wait_code "${BASE[gw]}/readyz" 200 || die "gateway not ready: $(tail -5 "$T/gw.log")"
wait_code "${BASE[gw_auth]}/readyz" 200 || die "gateway+auth not ready: $(tail -5 "$T/gw_auth.log")"
alive_check start-up
TOKEN=$("$PY" "$HELPER" acquire "${BASE[gw_auth]}/_fencegate/v1/locks/bench/acquire" "$AK" "$SK" bench 3600000) ||
    die "acquire through the election API failed: $(tail -5 "$T/gw_auth.log")"
note "origin :$ORG_PORT (pid $ORG_PID), nginx :$NGX_PORT (pid $NGX_PID), gateway :$GW_PORT (pid $GW_PID)," \
    "gateway+auth :$GWA_PORT (pid $GWA_PID), token $TOKEN"

# ---- objects, URLs, wrk script ----
declare -A URL # URL[TARGET.METHOD.BYTES]
for c in $CASES; do
    IFS=: read -r m b _ <<<"$c"
    key=obj-$m-$b
    [ -e "$T/body-$b" ] || head -c "$b" /dev/urandom >"$T/body-$b"
    [ "$m" = GET ] && cp "$T/body-$b" "$T/origin/bench/$key"
    URL[nginx.$m.$b]=${BASE[nginx]}/bench/$key
    URL[gw.$m.$b]=${BASE[gw]}/bench/$key
    op=get_object
    [ "$m" = PUT ] && op=put_object
    URL[gw_auth.$m.$b]=$("$PY" "$HELPER" presign-op "$op" "${BASE[gw_auth]}" "$AK" "$SK" bench "$key")
done
cat >"$T/wrk.lua" <<'EOF'
local body = os.getenv("BENCH_BODY")
if body and body ~= "" then
    local f = assert(io.open(body, "rb"))
    wrk.method = "PUT"
    wrk.body = f:read("*a")
    f:close()
end
local token = os.getenv("BENCH_TOKEN")
if token and token ~= "" then wrk.headers["X-Fencing-Token"] = token end
EOF

# check CASE TARGET: one request as wrk will send it must succeed and (GET)
# return the object; through gw_auth a PUT without the token and a GET with
# a broken signature must be refused, so the verification and the fence are
# really on the path being measured
check() {
    local m=$1 b=$2 tg=$3 u=${URL[$3.$1.$2]} tok=() got
    [ "$tg" = gw_auth ] && [ "$m" = PUT ] && tok=(-H "X-Fencing-Token: $TOKEN")
    if [ "$m" = GET ]; then
        got=$(curl -s -o "$T/check.out" -w '%{http_code}' "$u")
        if [ "$got" != 200 ] || ! cmp -s "$T/check.out" "$T/origin/bench/obj-GET-$b"; then
            die "GET $b via $tg: HTTP $got or wrong body"
        fi
        if [ "$tg" = gw_auth ]; then
            # the signature's last hex digit changed
            bad=${u%?}$([ "${u: -1}" = 0 ] && echo 1 || echo 0)
            got=$(curl -s -o /dev/null -w '%{http_code}' "$bad")
            [ "$got" = 403 ] || die "GET with a broken signature via gw_auth: HTTP $got, want 403"
        fi
    else
        got=$(curl -s -o /dev/null -w '%{http_code}' -T "$T/body-$b" "${tok[@]}" "$u")
        case $got in 200 | 201 | 204) ;; *) die "PUT $b via $tg: HTTP $got" ;; esac
        cmp -s "$T/origin/bench/obj-PUT-$b" "$T/body-$b" || die "PUT $b via $tg: the origin holds other bytes"
        if [ "$tg" = gw_auth ]; then
            got=$(curl -s -o /dev/null -w '%{http_code}' -T "$T/body-$b" "$u")
            [ "$got" = 428 ] || die "PUT without a token via gw_auth: HTTP $got, want 428"
        fi
    fi
}
for c in $CASES; do
    IFS=: read -r m b _ <<<"$c"
    for tg in "${TARGETS[@]}"; do check "$m" "$b" "$tg"; done
done
note "every target answers every case correctly; warming up"
for tg in "${TARGETS[@]}"; do
    BENCH_TOKEN=$TOKEN taskset -c "$LOAD_CPU" wrk -t1 -c16 -d1s -s "$T/wrk.lua" "${URL[$tg.GET.1024]:-${BASE[$tg]}/bench/}" >/dev/null
done

# ---- the wrk cases ----
RES=$T/results.tsv
printf 'hz\t%s\n' "$HZ" >"$RES"
T0=$(date +%s)
small_done=0
for c in $CASES; do
    IFS=: read -r m b conns <<<"$c"
    if [ "$small_done" = 0 ] && [ "$b" -gt 65536 ]; then
        for tg in "${TARGETS[@]}"; do
            # shellcheck disable=SC2046
            printf 'hwm\t%s\t%s\n' "$tg" "$(status_kb VmHWM $(proxy_pids "$tg"))" >>"$RES"
        done
        small_done=1
    fi
    for ((r = 0; r < REPEATS; r++)); do
        rot=("${TARGETS[@]:r%3}" "${TARGETS[@]:0:r%3}")
        for tg in "${rot[@]}"; do
            body="" wrk_token=""
            [ "$m" = PUT ] && body=$T/body-$b
            [ "$tg" = gw_auth ] && [ "$m" = PUT ] && wrk_token=$TOKEN
            ppids=$(proxy_pids "$tg")
            note "$m $(size_label "$b") -c$conns repeat $((r + 1))/$REPEATS: $tg"
            # shellcheck disable=SC2086
            read -r c0 u0 <<<"$(cpu_times $ppids)"
            BENCH_BODY=$body BENCH_TOKEN=$wrk_token taskset -c "$LOAD_CPU" wrk -t1 -c"$conns" -d"${SECS}s" --latency \
                -s "$T/wrk.lua" "${URL[$tg.$m.$b]}" >"$T/wrk.out" 2>&1 || die "wrk failed: $(cat "$T/wrk.out")"
            # shellcheck disable=SC2086
            read -r c1 u1 <<<"$(cpu_times $ppids)"
            read -r rps p50 p99 n errs <<<"$(wrkstats "$T/wrk.out")"
            printf 'wrk\t%s %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$(size_label "$b")" \
                "$conns" "$tg" "$r" "$rps" "$p50" "$p99" "$n" "$errs" "$((c1 - c0))" "$((u1 - u0))" >>"$RES"
        done
        alive_check "$m $b -c$conns"
    done
done
if [ "$small_done" = 0 ]; then
    for tg in "${TARGETS[@]}"; do
        # shellcheck disable=SC2046
        printf 'hwm\t%s\t%s\n' "$tg" "$(status_kb VmHWM $(proxy_pids "$tg"))" >>"$RES"
    done
fi

# ---- one big PUT per target ----
if [ "$BIG_MIB" -gt 0 ]; then
    head -c "$((BIG_MIB * 1048576))" /dev/urandom >"$T/body-big"
    printf 'biglabel\t%s\n' "$(size_label $((BIG_MIB * 1048576)))" >>"$RES"
    URL[gw_auth.big]=$("$PY" "$HELPER" presign-op put_object "${BASE[gw_auth]}" "$AK" "$SK" bench big)
    for tg in "${TARGETS[@]}"; do
        u=${URL[$tg.big]:-${BASE[$tg]}/bench/big} tok=()
        [ "$tg" = gw_auth ] && tok=(-H "X-Fencing-Token: $TOKEN")
        ppids=$(proxy_pids "$tg")
        for p in $ppids; do echo 5 >"/proc/$p/clear_refs"; done # resets VmHWM
        note "PUT $BIG_MIB MiB: $tg"
        # shellcheck disable=SC2086
        c0=$(cpu_ticks $ppids)
        read -r code speed <<<"$(taskset -c "$LOAD_CPU" curl -s -o "$T/big.out" -w '%{http_code} %{speed_upload}' \
            --max-time 240 -T "$T/body-big" "${tok[@]}" "$u" || true)"
        # shellcheck disable=SC2086
        c1=$(cpu_ticks $ppids) hwm=$(status_kb VmHWM $ppids)
        size=$(stat -c %s "$T/origin/bench/big" 2>/dev/null || echo 0)
        [ "$size" = $((BIG_MIB * 1048576)) ] || die "PUT $BIG_MIB MiB via $tg: HTTP $code, origin holds $size bytes"
        rm -f "$T/origin/bench/big"
        printf 'big\t%s\t%s\t%s\t%s\t%s\n' "$tg" "$(awk -v s="$speed" 'BEGIN {printf "%.1f", s / 1048576}')" \
            "$code" "$((c1 - c0))" "$hwm" >>"$RES"
    done
    rm -f "$T/body-big"
    alive_check "big PUT"
fi
ELAPSED=$(($(date +%s) - T0))

echo
echo "== fencegate proxy benchmark (dav origin on tmpfs): $(date -u +%Y-%m-%d), $(nproc) CPUs, ${SECS}s x $REPEATS" \
    "repeats per case, $ELAPSED s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$PY" "$HELPER" report "$RES"
echo
echo "command: FENCEGATE_BIN=$BIN BENCH_SECS=$SECS BENCH_REPEATS=$REPEATS bash tests/bench/proxy_bench_dav.sh"

# ---- optional profile of gw_auth under one case (GET 1 KiB at 16) ----
if [ "$PERF_SECS" != 0 ]; then
    command -v perf >/dev/null || die "perf missing (apt-get install linux-perf)"
    IFS=: read -r m b conns <<<"${BENCH_PERF_CASE:-GET:1024:16}"
    op=get_object body="" wrk_token=""
    [ "$m" = PUT ] && op=put_object body=$T/body-perf wrk_token=$TOKEN
    u=${URL[gw_auth.$m.$b]:-$("$PY" "$HELPER" presign-op "$op" "${BASE[gw_auth]}" "$AK" "$SK" bench "obj-$m-$b")}
    [ "$m" = GET ] && [ ! -e "$T/origin/bench/obj-GET-$b" ] && head -c "$b" /dev/urandom >"$T/origin/bench/obj-GET-$b"
    [ "$m" = PUT ] && head -c "$b" /dev/urandom >"$T/body-perf"
    cg=()
    [ "${BENCH_PERF_CG:-none}" != none ] && cg=(--call-graph "$BENCH_PERF_CG")
    perf record -q -F 999 "${cg[@]}" -p "$GWA_PID" -o "$T/perf.data" >"$T/perf.log" 2>&1 &
    PERF_PID=$!
    sleep 0.5
    BENCH_BODY=$body BENCH_TOKEN=$wrk_token taskset -c "$LOAD_CPU" wrk -t1 -c"$conns" -d"${PERF_SECS}s" \
        -s "$T/wrk.lua" "$u" >"$T/wrk-perf.out" 2>&1
    kill -INT "$PERF_PID"
    wait "$PERF_PID" || true # perf exits non-zero on SIGINT
    PERF_PID=""
    set +o pipefail # head closes the pipe early
    echo
    echo "== perf profile of gateway+auth, $m $(size_label "$b") -c$conns, ${PERF_SECS}s" \
        "($(grep Requests/sec "$T/wrk-perf.out"); errors: $(wrkstats "$T/wrk-perf.out" | awk '{print $5}'))"
    perf report -i "$T/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^#' | grep . | head -12
    echo
    perf report -i "$T/perf.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null |
        grep -v '^#' | grep . | head -40
    kept=$ROOT/build/perf-gw-auth-$(echo "$m-$b-c$conns" | tr '[:upper:]' '[:lower:]').data
    mkdir -p "$ROOT/build"
    cp "$T/perf.data" "$kept" && note "perf data kept in $kept"
    set -o pipefail
fi

# ---- optional system-call count of gw_auth under one case ----
SYSCALL_SECS=${BENCH_SYSCALLS:-0}
if [ "$SYSCALL_SECS" != 0 ]; then
    command -v strace >/dev/null || die "strace missing (apt-get install strace)"
    IFS=: read -r m b conns <<<"${BENCH_PERF_CASE:-GET:1024:16}"
    op=get_object body="" wrk_token=""
    [ "$m" = PUT ] && op=put_object body=$T/body-sys wrk_token=$TOKEN
    u=${URL[gw_auth.$m.$b]:-$("$PY" "$HELPER" presign-op "$op" "${BASE[gw_auth]}" "$AK" "$SK" bench "obj-$m-$b")}
    [ "$m" = GET ] && [ ! -e "$T/origin/bench/obj-GET-$b" ] && head -c "$b" /dev/urandom >"$T/origin/bench/obj-GET-$b"
    [ "$m" = PUT ] && head -c "$b" /dev/urandom >"$T/body-sys"
    strace -c -f -q -p "$GWA_PID" -o "$T/strace.out" 2>"$T/strace.log" &
    STRACE_PID=$!
    sleep 1 # attached before the first request
    BENCH_BODY=$body BENCH_TOKEN=$wrk_token taskset -c "$LOAD_CPU" wrk -t1 -c"$conns" -d"${SYSCALL_SECS}s" \
        -s "$T/wrk.lua" "$u" >"$T/wrk-sys.out" 2>&1
    kill -INT "$STRACE_PID"
    wait "$STRACE_PID" || true
    STRACE_PID=""
    read -r _ _ _ n errs <<<"$(wrkstats "$T/wrk-sys.out")"
    echo
    echo "== system calls per request of gateway+auth, $m $(size_label "$b") -c$conns, ${SYSCALL_SECS}s" \
        "under strace ($n requests, $errs errors)"
    awk -v n="$n" '$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" {c = $4; name = $NF; tot += c; row[name] = c}
        END {for (k in row) if (row[k] / n >= 0.01) printf "%-16s %6.2f\n", k, row[k] / n
             printf "%-16s %6.2f\n", "total", tot / n}' "$T/strace.out" | sort -k2 -rn
fi

# ---- metrics on against off: the accounting's instructions per small request ----
# The metrics cannot be switched off at run time, so their cost is measured in
# instructions under callgrind (tests/bench/metrics_cost.sh), which the
# machine's other load cannot disturb; BENCH_METRICS_BASELINE=BIN adds a build
# without the accounting (e.g. the commit before issue 23) for the difference.
if [ "${BENCH_METRICS_COST:-1}" != 0 ] && command -v valgrind >/dev/null; then
    echo
    bash "$ROOT/tests/bench/metrics_cost.sh" "$BIN" "${BENCH_METRICS_BASELINE:-}"
fi
