#!/usr/bin/env bash
# proxy_bench.sh: the gateway against nginx and against RGW itself, side by
# side in ONE run, on loopback.  Prints figures and ratios; asserts nothing
# about speed (the machine is small and noisy: read the ratios, not the
# absolute numbers).
#
#   bash tests/bench/proxy_bench.sh                 full run (~2.5 min)
#   BENCH_QUICK=1 bash tests/bench/proxy_bench.sh   ~40 s
#
# Three ways to the same Ceph RGW (tests/rgw/rgw.sh, booted in a temp dir):
#   direct   the client talks to RGW
#   nginx    a plain streaming reverse proxy (proxy_request_buffering off,
#            proxy_buffering off, HTTP/1.1 keepalive upstream, Host passed
#            through), NGINX_WORKERS worker processes (default 1: the gateway
#            runs one event loop)
#   gateway  build/fencegate serve, no principals (anonymous mode on
#            loopback): it re-signs every request with the upstream keys
# The bench bucket's objects are public-read, so unsigned GETs work on all
# three; PUTs go through presigned URLs (signed for each endpoint's Host) for
# direct and nginx, plain unsigned PUTs for the gateway.  Small GETs are also
# run as direct_sig / nginx_sig: a presigned GET URL replayed by wrk, so that
# RGW verifies a signature on every request as it does behind the gateway
# (which re-signs everything); that RGW work is most of the gap between the
# gateway and the unsigned runs on this 2-core machine.
#
# Measured: (1) small GET (4 KiB) with wrk: req/s, p50/p99 latency, in
# passes ordered direct nginx gateway direct_sig nginx_sig, then reversed, so
# drift hits everyone alike; CPU (utime+stime from /proc/PID/stat) of the proxy and
# of the RGW processes per 1000 requests; (2) large GET and (3) large PUT
# with curl, BENCH_RUNS rounds, endpoints rotated each round, median MiB/s;
# (4) peak RSS (VmHWM) of the gateway and of nginx (master + workers); CPU
# of the proxy per GiB for the large transfers; (5) conditional writes'
# cost: fenced PUTs of 1 KiB and 1 MiB with them off, on with the key's ETag
# cached (hit) and on with a HEAD first (miss), by tests/bench/cond_bench.py
# on the same RGW (BENCH_COND=0 leaves it out).
#
# Environment (defaults full / quick):
#   BENCH_QUICK=1        short run
#   FENCEGATE_BIN        gateway binary (build/fencegate)
#   BENCH_WRK_SECS       seconds per wrk pass (10 / 5)
#   BENCH_WRK_PASSES     wrk passes per endpoint (2 / 1)
#   BENCH_WRK_THREADS, BENCH_WRK_CONNS   wrk -t / -c (2, 32)
#   BENCH_LARGE_MIB      large object size in MiB (256 / 64)
#   BENCH_RUNS           large GET/PUT rounds (3 / 2)
#   NGINX_WORKERS        nginx worker_processes (1)
#   BENCH_RGW_NODELAY    1: restart radosgw with tcp_nodelay=1 (see
#                        restart_rgw_nodelay); 0: rgw.sh as is (1)
#   BENCH_PERF=1         perf record the gateway (dwarf call graphs) during its
#                        first small-GET pass into TMP/perf-gateway.data and
#                        its first large PUT into TMP/perf-gateway-put.data
#                        (skews that pass's figures; implies BENCH_KEEP=1)
#   BENCH_KEEP=1         keep the temp dir (logs, configs) on exit
#   BENCH_COND=0         leave out (5), the conditional-write rows
#
# Every process started here is stopped by PID in the EXIT trap; nothing is
# ever killed by name.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
unset PYTHONHOME PYTHONPATH

CMDLINE="$(for v in BENCH_QUICK FENCEGATE_BIN BENCH_WRK_SECS BENCH_WRK_PASSES BENCH_WRK_THREADS \
    BENCH_WRK_CONNS BENCH_LARGE_MIB BENCH_RUNS NGINX_WORKERS BENCH_RGW_NODELAY BENCH_COND; do
    if [ -n "${!v:-}" ]; then printf '%s=%q ' "$v" "${!v}"; fi
done)bash tests/bench/proxy_bench.sh"

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
    d_secs=5 d_passes=1 d_mib=64 d_runs=2
else
    QUICK=0 d_secs=10 d_passes=2 d_mib=256 d_runs=3
fi
WRK_SECS=${BENCH_WRK_SECS:-$d_secs}
WRK_PASSES=${BENCH_WRK_PASSES:-$d_passes}
WRK_THREADS=${BENCH_WRK_THREADS:-2}
WRK_CONNS=${BENCH_WRK_CONNS:-32}
LARGE_MIB=${BENCH_LARGE_MIB:-$d_mib}
RUNS=${BENCH_RUNS:-$d_runs}
NGINX_WORKERS=${NGINX_WORKERS:-1}
RGW_NODELAY=${BENCH_RGW_NODELAY:-1}
PERF=${BENCH_PERF:-0}
BIN=${FENCEGATE_BIN:-build/fencegate}
case "$BIN" in /*) ;; *) BIN=$ROOT/$BIN ;; esac
PY=/usr/bin/python3
HELPER=$ROOT/tests/bench/proxy_bench_helper.py
RGW_SH=$ROOT/tests/rgw/rgw.sh
NGINX=${NGINX:-/usr/sbin/nginx}
BUCKET=bench
SMALL_BYTES=4096
LARGE_BYTES=$((LARGE_MIB * 1024 * 1024))
HZ=$(getconf CLK_TCK)
ENDPOINTS=(direct nginx gateway)

die() {
    echo "proxy_bench: $*" >&2
    exit 1
}
note() { echo "proxy_bench: $*" >&2; }

[ -x "$BIN" ] || die "$BIN not found or not executable (make, or set FENCEGATE_BIN)"
for t in "$NGINX" /usr/bin/wrk /usr/bin/curl "$PY"; do
    [ -x "$t" ] || die "$t missing (tests/deps.sh installs nginx-light and wrk)"
done

T=$(mktemp -d /tmp/fg-proxy-bench.XXXXXX)
GW_PID="" NGX_PID="" RGW_STARTED=0

BENCH=proxy_bench.sh
# shellcheck source=tests/bench/lib.sh
. "$ROOT/tests/bench/lib.sh"

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_pid "$GW_PID"
    stop_pid "$NGX_PID"
    if [ "$RGW_STARTED" = 1 ]; then
        bash "$RGW_SH" stop "$T/rgw" >/dev/null 2>&1 || note "rgw.sh stop failed"
    fi
    finish_tmp "$rc" "gw.log nginx-peer/error.log rgw/" "$PERF"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- helpers over /proc (and lib.sh's cpu_ticks, status_kb, nginx_pids) ----

proxy_pids() { # TARGET: the PIDs whose CPU counts as the proxy's
    case $1 in
    gateway) echo "$GW_PID" ;;
    nginx*) nginx_pids "$NGX_PID" ;;
    *) echo "" ;;
    esac
}
rgw_pids() { awk '{print $2}' "$T/rgw/pids"; }
alive_check() {
    if ! kill -0 "$GW_PID" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$GW_PID/stat")" = Z ]; then
        die "the gateway died during $1; log tail:$(echo; tail -20 "$T/gw.log")"
    fi
    kill -0 "$NGX_PID" 2>/dev/null || die "nginx died during $1"
}
median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# restart_rgw_nodelay: rgw.sh's beast frontend runs without TCP_NODELAY, so on
# a keep-alive connection every response whose headers and body go out in two
# writes waits for the client's delayed ACK (~40 ms): 23 req/s on one
# connection, ~730 req/s at -c32 whoever the client is, which would hide any
# proxy's cost.  Restart this instance's radosgw (by PID, same conf, same
# port) with tcp_nodelay=1 and record the new PID in DIR/pids, so that
# rgw.sh stop stops it.  BENCH_RGW_NODELAY=0 keeps the harness default.
restart_rgw_nodelay() {
    local old new i conf=$T/rgw/ceph.conf
    old=$(awk '$1 == "rgw" {print $2}' "$T/rgw/pids")
    ours "$old" || die "radosgw (pid $old) not running"
    kill -TERM "$old"
    for ((i = 0; i < 100; i++)); do
        ours "$old" || break
        sleep 0.1
    done
    ours "$old" && kill -KILL "$old"
    # shellcheck disable=SC2153 # RGW_PORT comes from rgw.sh's env file
    setsid radosgw -c "$conf" -f -n client.rgw \
        --rgw-frontends "beast endpoint=127.0.0.1:$RGW_PORT tcp_nodelay=1" \
        </dev/null >>"$T/rgw/log/rgw-nodelay.out" 2>&1 &
    new=$!
    sed -i "s/^rgw $old\$/rgw $new/" "$T/rgw/pids"
    for ((i = 0; i < 300; i++)); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$RGW_ENDPOINT/" || true)" != 000 ] &&
            return 0
        ours "$new" || die "radosgw with tcp_nodelay=1 exited: $(tail -5 "$T/rgw/log/rgw.log")"
        sleep 0.1
    done
    die "radosgw with tcp_nodelay=1 does not answer"
}

T0=$(date +%s)

# ---- RGW ----
note "booting RGW in $T/rgw"
RGW_STARTED=1
RGW_MEMSTORE_GB=${RGW_MEMSTORE_GB:-16} bash "$RGW_SH" start "$T/rgw" >"$T/rgw-start.log" 2>&1 ||
    die "rgw.sh start failed: $(tail -5 "$T/rgw-start.log")"
# shellcheck disable=SC1091 # RGW_ENDPOINT RGW_PORT RGW_ACCESS_KEY RGW_SECRET_KEY ...
. "$T/rgw/env"
if [ "$RGW_NODELAY" = 1 ]; then
    restart_rgw_nodelay
fi
read -r GW_PORT NGX_PORT <<<"$("$PY" "$HELPER" ports 2)"

head -c "$SMALL_BYTES" /dev/urandom >"$T/small.bin"
head -c "$LARGE_BYTES" /dev/urandom >"$T/large.bin"
"$PY" "$HELPER" setup "$RGW_ENDPOINT" "$RGW_ACCESS_KEY" "$RGW_SECRET_KEY" "$BUCKET" \
    "$T/small.bin" "$T/large.bin" || die "bucket setup failed"

# ---- nginx: a plain streaming reverse proxy to RGW ----
nginx_conf peer "$NGX_PORT" "$NGINX_WORKERS" "$(nginx_proxy_location rgw)" \
    "upstream rgw { server ${RGW_ENDPOINT#http://}; keepalive 64; }"
start_nginx peer
NGX_PID=$!

# ---- gateway ----
cat >"$T/gw.json" <<EOF
{
  "listen": ["127.0.0.1:$GW_PORT"],
  "data_dir": "$T/gw-data",
  "log_level": "warn",
  "workers": 1,
  "upstream": {
    "endpoint": "$RGW_ENDPOINT",
    "region": "us-east-1",
    "addressing": "path",
    "access_key_env": "FG_BENCH_UPSTREAM_AK",
    "secret_key_env": "FG_BENCH_UPSTREAM_SK"
  }
}
EOF
mkdir -p "$T/gw-data"
FG_BENCH_UPSTREAM_AK=$RGW_ACCESS_KEY FG_BENCH_UPSTREAM_SK=$RGW_SECRET_KEY \
    "$BIN" serve -c "$T/gw.json" </dev/null >"$T/gw.log" 2>&1 &
GW_PID=$!

declare -A URL
URL[direct]=$RGW_ENDPOINT
URL[nginx]=http://127.0.0.1:$NGX_PORT
URL[gateway]=http://127.0.0.1:$GW_PORT
wait_code "${URL[nginx]}/" any || die "nginx does not answer: $(tail -5 "$T/nginx-peer/error.log")"
for ((i = 0; i < 150; i++)); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "${URL[gateway]}/healthz" || true)" = 200 ] && break
    kill -0 "$GW_PID" 2>/dev/null || die "the gateway exited at start: $(tail -20 "$T/gw.log")"
    sleep 0.1
done
[ "$i" -lt 150 ] || die "the gateway is not ready: $(tail -20 "$T/gw.log")"
GW_RSS_START=$(status_kb VmRSS "$GW_PID")

# small-GET targets: unsigned GETs of the public-read object on all three,
# plus direct_sig / nginx_sig: the same GET through a presigned URL (valid an
# hour, replayed by wrk), so RGW checks a signature as it does for every
# request the gateway re-signs.  Compare the gateway with both.
SMALL_EPS=(direct nginx gateway direct_sig nginx_sig)
declare -A SURL
for ep in "${ENDPOINTS[@]}"; do SURL[$ep]=${URL[$ep]}/$BUCKET/small; done
SURL[direct_sig]=$("$PY" "$HELPER" presign-get "${URL[direct]}" "$RGW_ACCESS_KEY" "$RGW_SECRET_KEY" "$BUCKET" small)
SURL[nginx_sig]=$("$PY" "$HELPER" presign-get "${URL[nginx]}" "$RGW_ACCESS_KEY" "$RGW_SECRET_KEY" "$BUCKET" small)
for ep in "${SMALL_EPS[@]}"; do
    got=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "${SURL[$ep]}")
    [ "$got" = "200 $SMALL_BYTES" ] || die "GET small via $ep: $got (want 200 $SMALL_BYTES)"
done
note "ready after $(($(date +%s) - T0)) s: RGW ${URL[direct]}, nginx ${URL[nginx]} (pid $NGX_PID), gateway ${URL[gateway]} (pid $GW_PID)"

# ---- (1) small GET with wrk ----
declare -A RPS P50 P99 NREQ NERR PCPU RCPU
for ep in "${SMALL_EPS[@]}"; do
    RPS[$ep]="" P50[$ep]="" P99[$ep]="" NREQ[$ep]=0 NERR[$ep]=0 PCPU[$ep]=0 RCPU[$ep]=0
    wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d1s "${SURL[$ep]}" >/dev/null # warm-up
done
# passes ABCDE EDCBA ...: drift over the run hits every target alike
order=()
for ((p = 0; p < WRK_PASSES; p++)); do
    if ((p % 2 == 0)); then
        order+=("${SMALL_EPS[@]}")
    else
        for ((i = ${#SMALL_EPS[@]} - 1; i >= 0; i--)); do order+=("${SMALL_EPS[i]}"); done
    fi
done
RGW_PIDS=$(rgw_pids)
pass=0
for ep in "${order[@]}"; do
    pass=$((pass + 1))
    note "small GET pass $pass/${#order[@]}: $ep, wrk -t$WRK_THREADS -c$WRK_CONNS -d${WRK_SECS}s"
    ppids=$(proxy_pids "$ep")
    # shellcheck disable=SC2086
    c0=$(cpu_ticks $ppids) r0=$(cpu_ticks $RGW_PIDS)
    perf_pid=""
    if [ "$PERF" = 1 ] && [ "$ep" = gateway ] && [ ! -e "$T/perf-gateway.data" ]; then
        perf record -q -F 499 --call-graph dwarf,16384 -p "$GW_PID" -o "$T/perf-gateway.data" \
            -- sleep "$WRK_SECS" >"$T/perf.log" 2>&1 &
        perf_pid=$!
    fi
    wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"${WRK_SECS}s" --latency "${SURL[$ep]}" \
        >"$T/wrk-$ep-$pass.txt" 2>&1 || die "wrk failed: $(cat "$T/wrk-$ep-$pass.txt")"
    if [ -n "$perf_pid" ]; then wait "$perf_pid" || note "perf record failed: $(tail -3 "$T/perf.log")"; fi
    # shellcheck disable=SC2086
    c1=$(cpu_ticks $ppids) r1=$(cpu_ticks $RGW_PIDS)
    read -r rps p50 p99 n errs <<<"$("$PY" "$HELPER" wrkstats "$T/wrk-$ep-$pass.txt")"
    RPS[$ep]+="$rps " P50[$ep]+="$p50 " P99[$ep]+="$p99 "
    NREQ[$ep]=$((NREQ[$ep] + n)) NERR[$ep]=$((NERR[$ep] + errs))
    PCPU[$ep]=$((PCPU[$ep] + c1 - c0)) RCPU[$ep]=$((RCPU[$ep] + r1 - r0))
    alive_check "small GET via $ep"
done

# ---- (2) large GET, (3) large PUT with curl ----
declare -A GETS PUTS
GET_ERR=0 PUT_ERR=0
declare -A GCPU GN PCPUL PN
for ep in "${ENDPOINTS[@]}"; do GETS[$ep]="" PUTS[$ep]="" GCPU[$ep]=0 GN[$ep]=0 PCPUL[$ep]=0 PN[$ep]=0; done
for ((r = 0; r < RUNS; r++)); do
    rot=("${ENDPOINTS[@]:r%3}" "${ENDPOINTS[@]:0:r%3}")
    for ep in "${rot[@]}"; do
        note "large GET round $((r + 1))/$RUNS: $ep ($LARGE_MIB MiB)"
        ppids=$(proxy_pids "$ep")
        # shellcheck disable=SC2086
        c0=$(cpu_ticks $ppids)
        read -r code size speed <<<"$(curl -s -o /dev/null -w '%{http_code} %{size_download} %{speed_download}' \
            --max-time 240 "${URL[$ep]}/$BUCKET/large" || true)"
        # shellcheck disable=SC2086
        GCPU[$ep]=$((GCPU[$ep] + $(cpu_ticks $ppids) - c0)) GN[$ep]=$((GN[$ep] + 1))
        if [ "$code $size" != "200 $LARGE_BYTES" ]; then
            note "large GET via $ep: HTTP ${code:-?}, ${size:-?} bytes (want 200 $LARGE_BYTES)"
            GET_ERR=$((GET_ERR + 1))
            continue
        fi
        GETS[$ep]+="$(awk -v s="$speed" 'BEGIN {printf "%.0f", s / 1048576}') "
    done
    alive_check "large GET"
    # presigned PUT URLs for this round: the Host is signed, so per endpoint
    declare -A PUTURL=()
    PUTURL[direct]=$("$PY" "$HELPER" presign "${URL[direct]}" "$RGW_ACCESS_KEY" "$RGW_SECRET_KEY" "$BUCKET" "put-direct-$r")
    PUTURL[nginx]=$("$PY" "$HELPER" presign "${URL[nginx]}" "$RGW_ACCESS_KEY" "$RGW_SECRET_KEY" "$BUCKET" "put-nginx-$r")
    PUTURL[gateway]=${URL[gateway]}/$BUCKET/put-gateway-$r
    keys=()
    for ep in "${rot[@]}"; do
        note "large PUT round $((r + 1))/$RUNS: $ep ($LARGE_MIB MiB)"
        ppids=$(proxy_pids "$ep")
        perf_pid=""
        if [ "$PERF" = 1 ] && [ "$ep" = gateway ] && [ ! -e "$T/perf-gateway-put.data" ]; then
            perf record -q -F 499 --call-graph dwarf,16384 -p "$GW_PID" \
                -o "$T/perf-gateway-put.data" >"$T/perf-put.log" 2>&1 &
            perf_pid=$!
            sleep 0.5
        fi
        # shellcheck disable=SC2086
        c0=$(cpu_ticks $ppids)
        read -r code speed <<<"$(curl -s -o "$T/put-$ep.out" -w '%{http_code} %{speed_upload}' \
            --max-time 240 -T "$T/large.bin" "${PUTURL[$ep]}" || true)"
        # shellcheck disable=SC2086
        PCPUL[$ep]=$((PCPUL[$ep] + $(cpu_ticks $ppids) - c0)) PN[$ep]=$((PN[$ep] + 1))
        if [ -n "$perf_pid" ]; then
            kill -INT "$perf_pid" 2>/dev/null
            wait "$perf_pid" || true
        fi
        if [ "$code" != 200 ]; then
            note "large PUT via $ep: HTTP ${code:-?}: $(head -c 300 "$T/put-$ep.out" 2>/dev/null)"
            PUT_ERR=$((PUT_ERR + 1))
            continue
        fi
        keys+=("put-$ep-$r")
        PUTS[$ep]+="$(awk -v s="$speed" 'BEGIN {printf "%.0f", s / 1048576}') "
    done
    alive_check "large PUT"
    # every stored object must be whole; delete them so memstore can free them
    if [ "${#keys[@]}" -gt 0 ]; then
        "$PY" "$HELPER" check "${URL[direct]}" "$RGW_ACCESS_KEY" "$RGW_SECRET_KEY" "$BUCKET" \
            "$LARGE_BYTES" "${keys[@]}" || PUT_ERR=$((PUT_ERR + 1))
    fi
done

# ---- (4) peak RSS ----
GW_HWM=$(status_kb VmHWM "$GW_PID")
GW_RSS_END=$(status_kb VmRSS "$GW_PID")
# shellcheck disable=SC2046
NGX_HWM=$(status_kb VmHWM $(nginx_pids "$NGX_PID"))
# shellcheck disable=SC2046
NGX_WORKER_HWM=$(status_kb VmHWM $(cat /proc/"$NGX_PID"/task/*/children 2>/dev/null))
GW_LOGLINES=$(grep -c . "$T/gw.log" || true)
ELAPSED=$(($(date +%s) - T0))

# ---- report ----
mean() { tr ' ' '\n' | awk -v f="$1" 'NF {s += $1; n++} END {if (n) printf f, s / n; else print "nan"}'; }
per1k() { awk -v t="$1" -v n="$2" -v hz="$HZ" 'BEGIN {if (n) printf "%.1f", t * 1000 / hz / n * 1000; else print "nan"}'; }
declare -A V
for ep in "${SMALL_EPS[@]}"; do
    V[rps.$ep]=$(echo "${RPS[$ep]}" | mean %.0f)
    V[p50.$ep]=$(echo "${P50[$ep]}" | mean %.2f)
    V[p99.$ep]=$(echo "${P99[$ep]}" | mean %.2f)
    V[err.$ep]=${NERR[$ep]}
    V[rcpu.$ep]=$(per1k "${RCPU[$ep]}" "${NREQ[$ep]}")
    V[pcpu.$ep]=$(per1k "${PCPU[$ep]}" "${NREQ[$ep]}")
done
for ep in "${ENDPOINTS[@]}"; do
    V[get.$ep]=$(echo "${GETS[$ep]}" | tr ' ' '\n' | awk NF | median)
    V[put.$ep]=$(echo "${PUTS[$ep]}" | tr ' ' '\n' | awk NF | median)
    # CPU ms per GiB moved: ticks * 1000 / HZ / (transfers * MiB / 1024)
    V[gcpu.$ep]=$(awk -v t="${GCPU[$ep]}" -v n="${GN[$ep]}" -v m="$LARGE_MIB" -v hz="$HZ" \
        'BEGIN {if (n) printf "%.0f", t * 1000 / hz / (n * m / 1024); else print "nan"}')
    V[pcpul.$ep]=$(awk -v t="${PCPUL[$ep]}" -v n="${PN[$ep]}" -v m="$LARGE_MIB" -v hz="$HZ" \
        'BEGIN {if (n) printf "%.0f", t * 1000 / hz / (n * m / 1024); else print "nan"}')
done
V[gcpu.direct]=- V[pcpul.direct]=-
V[pcpu.direct]=- V[pcpu.direct_sig]=- V[rss.direct]=-
V[rss.nginx]=$(awk -v k="$NGX_HWM" 'BEGIN {printf "%.1f", k / 1024}')
V[rss.gateway]=$(awk -v k="$GW_HWM" 'BEGIN {printf "%.1f", k / 1024}')

# row LABEL METRIC [SUFFIX]: direct, nginx, gateway and the ratios; with
# SUFFIX _sig the direct and nginx columns are their presigned-URL runs
row() {
    local sfx=${3:-}
    local d=${V[$2.direct$sfx]} n=${V[$2.nginx$sfx]} g=${V[$2.gateway]}
    awk -v l="$1" -v d="$d" -v n="$n" -v g="$g" 'function r(a, b) {
            if (a == "-" || b == "-" || a == "nan" || b == "nan" || b + 0 == 0) return "-"
            return sprintf("%.2f", a / b) }
        BEGIN {printf "%-36s %9s %9s %9s %10s %9s\n", l, d, n, g, r(g, d), r(g, n)}'
}
echo
echo "== fencegate proxy benchmark: $(nproc) cores, quick=$QUICK, $ELAPSED s, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   small GET: ${SMALL_BYTES} B public-read object, wrk -t$WRK_THREADS -c$WRK_CONNS, $WRK_PASSES pass(es) x ${WRK_SECS}s per target (ABCDE EDCBA order), mean of passes"
echo "   \"unsigned\": anonymous GET; \"signed\": direct/nginx replay a presigned GET URL, so RGW verifies SigV4 as it does on every request the gateway re-signs"
echo "   large GET/PUT: $LARGE_MIB MiB object, curl, $RUNS round(s), median; nginx worker_processes=$NGINX_WORKERS; RGW tcp_nodelay=$RGW_NODELAY"
printf '%-36s %9s %9s %9s %10s %9s\n' "" direct nginx gateway gw/direct gw/nginx
row "small GET req/s, unsigned" rps
row "small GET req/s, signed" rps _sig
row "small GET p50 ms, unsigned" p50
row "small GET p50 ms, signed" p50 _sig
row "small GET p99 ms, unsigned" p99
row "small GET p99 ms, signed" p99 _sig
row "small GET errors (non-2xx+socket)" err
row "small GET errors, signed" err _sig
row "proxy CPU ms / 1000 GETs, unsigned" pcpu
row "proxy CPU ms / 1000 GETs, signed" pcpu _sig
row "RGW CPU ms / 1000 GETs, unsigned" rcpu
row "RGW CPU ms / 1000 GETs, signed" rcpu _sig
row "large GET MiB/s" get
row "large PUT MiB/s (presigned / plain)" put
row "proxy CPU ms / GiB, large GET" gcpu
row "proxy CPU ms / GiB, large PUT" pcpul
row "peak RSS MiB (VmHWM)" rss
echo
echo "   nginx VmHWM: master+workers $((NGX_HWM / 1024)) MiB, workers $((NGX_WORKER_HWM / 1024)) MiB;" \
    "gateway VmRSS: $((GW_RSS_START / 1024)) MiB at start, $((GW_RSS_END / 1024)) MiB at end," \
    "VmHWM $((GW_HWM / 1024)) MiB"
echo "   large GET errors: $GET_ERR, large PUT errors: $PUT_ERR, gateway log lines (warn+): $GW_LOGLINES"
if [ "$GW_LOGLINES" -gt 0 ]; then
    echo "   gateway log (last 5):"
    tail -5 "$T/gw.log" | sed 's/^/     /'
fi
echo "   raw GET MiB/s: direct[${GETS[direct]}] nginx[${GETS[nginx]}] gateway[${GETS[gateway]}]"
echo "   raw PUT MiB/s: direct[${PUTS[direct]}] nginx[${PUTS[nginx]}] gateway[${PUTS[gateway]}]"
echo "   raw req/s per pass: $(for ep in "${SMALL_EPS[@]}"; do printf '%s[%s] ' "$ep" "${RPS[$ep]% }"; done)"

# ---- (5) conditional writes: fenced PUTs, off / on (hit) / on (miss) ----
if [ "${BENCH_COND:-1}" = 1 ]; then
    if [ "$QUICK" = 1 ]; then n_small=100 n_large=15; else n_small=300 n_large=40; fi
    stop_pid "$GW_PID" # its own gateways from here; the proxy's figures are printed
    GW_PID=""
    echo
    echo "== conditional writes: fenced PUT, sequential on one connection, $n_small x 1 KiB," \
        "$n_large x 1 MiB per row (tests/bench/cond_bench.py)"
    FENCEGATE_BIN=$BIN "$PY" "$ROOT/tests/bench/cond_bench.py" --rgw-env "$T/rgw/env" \
        --n-small "$n_small" --n-large "$n_large" || die "cond_bench.py failed"
fi
echo "   command: $CMDLINE"
