#!/usr/bin/env bash
# cores_bench.sh [N ...]: how the gateway scales with its worker loops, against
# nginx with as many worker processes (make bench-cores; default N: "1 2").
#
# The case is gateway-bound: a PUT of BENCH_BYTES (1 MiB) with a signed
# payload (x-amz-content-sha256 is the body's SHA-256, so the gateway hashes
# every byte to check it, then verifies the SigV4 signature, re-signs and
# streams the body upstream), replayed by wrk: the headers are signed once
# per run, with a fixed x-amz-date the gateway accepts for 15 minutes.  The
# origin (BENCH_ORIGIN) is the sink, tests/bench/sink_origin.c, which reads
# each body to its end in the kernel and keeps none of it, so that the origin
# takes little of the CPUs the target is to scale onto; or "dav", nginx's dav
# module writing each body to a file on tmpfs, which on some hosts costs more
# per request than the gateway itself.  The peer is nginx as a streaming
# reverse proxy to it (it checks no signature and hashes nothing: the
# side-by-side shows what the gateway's own work costs).  With the dav origin
# a PUT's bytes are compared with the file it wrote; with the sink, its byte
# count, and a PUT refused for its hash must never reach the sink whole.
#
# For each N: the gateway with "workers": N (when this build has the key; a
# build without it runs N=1 only and prints n/a for the others) and nginx
# with worker_processes N, one after the other, BENCH_SECS each, repeated
# BENCH_REPEATS times (alternating).  Printed per target and N: req/s, MiB/s,
# p50/p99, CPU µs per request (utime+stime of every process and thread of the
# target), CPUs busy (the target's CPU seconds per second: below N, the load
# generator or the origin was the bottleneck), the scaling ratio (req/s at
# N over req/s at the first N), the load's CPU µs per request (wrk's and the
# origin's), and the ceiling: the req/s the machine's CPUs allow at the
# target's and the load's CPU per request, and that ceiling's scaling.  On a
# machine where they share CPUs the ceiling, not the target, may bound the
# scaling: at N >= the CPU count it is CPUs / (target + load) per request.
#
# CPUs: with N below the machine's CPU count, the target runs on CPUs 0..N-1
# and wrk and the origin on the others (taskset); at N >= the CPU count all
# share every CPU (on a 2-core machine, N=2 shares the machine with the load
# generator and the origin, so the ratio understates the gateway's own).
#
# Self-contained: needs no network, no package manager and no Python package
# beyond the standard library.  What it runs, and where from (env vars):
#   FENCEGATE_BIN  the gateway (build/fencegate); links Debian 12's libevent
#                  (libevent-2.1-7, libevent-openssl-2.1-7), libcurl4, libssl3,
#                  libjansson4, liblmdb0, libexpat1: on another distribution,
#                  carry them in a folder and set LD_LIBRARY_PATH, or carry
#                  `make bench-cores-kit`'s folder (tests/bench/cores_kit.sh:
#                  the four programs with their libraries and loader)
#   NGINX          nginx with the dav module (/usr/sbin/nginx, nginx-light)
#   WRK            wrk (wrk in PATH)
#   curl           in PATH, for the readiness checks and the check PUTs
#   PYTHON3        python3 (stdlib only: tests/bench/cores_sign.py signs)
#   taskset (util-linux), awk, sed, head, cmp, mktemp: the usual base system
#   BENCH_TMP      where the temp dir goes (/dev/shm)
# Without Python: BENCH_PORTS="ORIGIN TARGET" (two free ports) and
# BENCH_PRESIGNED=DIR holding "body" and "headers", the output of
# `cores_sign.py sign 127.0.0.1:TARGET /bench/obj DIR/body AK SK` made
# elsewhere less than 15 minutes before the last run (AK and SK below).
# Tuning: BENCH_SECS (10), BENCH_REPEATS (2), BENCH_BYTES (1048576),
# BENCH_CONNS (per N: 8 x N, at least 16), BENCH_WRK_THREADS (the load CPUs,
# at most 8), BENCH_ORIGIN_WORKERS (half the CPUs, at least 1; dav), BENCH_KEEP=1,
# BENCH_ORIGIN (sink or dav; sink), BENCH_SINK (build/tests/bench/sink_origin).
# BENCH_ACCEPT: "accept" modes to run beside the build's default (target gw):
# "acceptor" and/or "reuseport", as targets gw-acceptor and gw-reuseport, at
# N > 1 only (their scaling is against gw at the first N).  BENCH_CLOSE=1: every request on a new
# connection (wrk sends "Connection: close"), the acceptor's worst case.
# Fails if a target answers wrongly, or if the gateway forwards a body that
# does not match the signed hash; asserts nothing about speed.  Every process started
# here is stopped by PID in the EXIT trap; nothing is killed by name.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY

COUNTS=("$@")
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(1 2)
SECS=${BENCH_SECS:-10}
REPEATS=${BENCH_REPEATS:-2}
BYTES=${BENCH_BYTES:-1048576}
BIN=${FENCEGATE_BIN:-$ROOT/build/fencegate}
case "$BIN" in /*) ;; *) BIN=$(pwd)/$BIN ;; esac
NGINX=${NGINX:-/usr/sbin/nginx}
WRK=${WRK:-$(command -v wrk || echo wrk)}
PY=${PYTHON3:-$(command -v python3 || echo python3)}
SIGN=$HERE/cores_sign.py
NCPU=$(nproc)
HZ=$(getconf CLK_TCK)
AK=AKIAFGCORESBENCH0001
SK=coresbenchcoresbenchcoresbenchcoresbench

die() {
    echo "cores_bench: $*" >&2
    exit 1
}
note() { echo "cores_bench: $*" >&2; }

[ -x "$BIN" ] || die "$BIN not found or not executable (make, or set FENCEGATE_BIN)"
[ -n "${BENCH_PRESIGNED:-}" ] && [ -z "${BENCH_PORTS:-}" ] && die "BENCH_PRESIGNED needs BENCH_PORTS"
[ -n "${BENCH_PRESIGNED:-}" ] && PY=true # no Python needed
for t in "$NGINX" "$WRK" curl "$PY"; do
    command -v "$t" >/dev/null || die "$t missing (set NGINX, WRK, PYTHON3; curl in PATH)"
done
command -v taskset >/dev/null || die "taskset missing (util-linux)"
"$NGINX" -V 2>&1 | grep -q -- --with-http_dav_module || die "$NGINX has no dav module (nginx-light has it)"
for n in "${COUNTS[@]}"; do
    case $n in '' | *[!0-9]* | 0) die "core counts are positive integers, not '$n'" ;; esac
done
MAXN=0
for n in "${COUNTS[@]}"; do [ "$n" -gt "$MAXN" ] && MAXN=$n; done
ORIGIN_WORKERS=${BENCH_ORIGIN_WORKERS:-$(((NCPU + 1) / 2))}
ORIGIN=${BENCH_ORIGIN:-sink}
SINK=${BENCH_SINK:-$ROOT/build/tests/bench/sink_origin}
case $ORIGIN in
dav) ;;
sink) [ -x "$SINK" ] || die "$SINK not found (make $ROOT/build/tests/bench/sink_origin, or set BENCH_SINK)" ;;
*) die "BENCH_ORIGIN: sink or dav, not '$ORIGIN'" ;;
esac

T=$(mktemp -d "${BENCH_TMP:-/dev/shm}/fg-cores.XXXXXX")
ORG_PID="" TGT_PID="" TGT_NGINX=""
BENCH=cores_bench.sh
# shellcheck source=tests/bench/lib.sh
. "$HERE/lib.sh"
# stop_nginx NAME PID: stop_pid for an nginx whose command line may not name
# $T (under cores_kit.sh's loader, nginx's process title overwrites it): the
# pid file it wrote under $T identifies it instead.
stop_nginx() {
    local pid=$2 i
    [ -n "$pid" ] || return 0
    if ! ours "$pid" && [ "$(cat "$T/nginx-$1/nginx.pid" 2>/dev/null)" != "$pid" ]; then
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}
stop_target() {
    if [ -n "$TGT_NGINX" ]; then stop_nginx "$TGT_NGINX" "$TGT_PID"; else stop_pid "$TGT_PID"; fi
    TGT_PID="" TGT_NGINX=""
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_target
    if [ "$ORIGIN" = sink ]; then stop_pid "$ORG_PID"; else stop_nginx origin "$ORG_PID"; fi
    finish_tmp "$rc" "gw-*.log, nginx-*/error.log"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# cpus N: "SERVER LOAD" CPU lists for a target with N workers
cpus() {
    if [ "$1" -lt "$NCPU" ]; then
        echo "0-$(($1 - 1)) $1-$((NCPU - 1))"
    else
        echo "0-$((NCPU - 1)) 0-$((NCPU - 1))"
    fi
}
# child_ticks: utime+stime of this shell's children that have been waited for
# (wrk runs in the foreground, so the difference around it is wrk's own)
child_ticks() { awk '{print $16 + $17}' "/proc/$$/stat"; }
# pin LIST PID...: every thread of each PID onto LIST
pin() {
    local l=$1 p
    shift
    for p in "$@"; do taskset -a -p -c "$l" "$p" >/dev/null; done
}

if [ -n "${BENCH_PORTS:-}" ]; then
    read -r ORG_PORT TGT_PORT <<<"$BENCH_PORTS"
else
    read -r ORG_PORT TGT_PORT <<<"$("$PY" "$SIGN" ports 2)"
fi
mkdir -p "$T/origin/bench"
if [ -n "${BENCH_PRESIGNED:-}" ]; then
    cp "$BENCH_PRESIGNED/body" "$T/body"
    BYTES=$(stat -c %s "$T/body")
else
    head -c "$BYTES" /dev/urandom >"$T/body"
fi

if [ "$ORIGIN" = sink ]; then
    taskset -c "0-$((NCPU - 1))" "$SINK" "$ORG_PORT" "$T/sink.pid" </dev/null >"$T/sink.log" 2>&1 &
    ORG_PID=$!
    wait_code "http://127.0.0.1:$ORG_PORT/sink-stats" 200 || die "sink origin does not answer: $(tail -3 "$T/sink.log")"
else
    nginx_conf origin "$ORG_PORT" "$ORIGIN_WORKERS" "root $T/origin;
        location / { dav_methods PUT DELETE; create_full_put_path on; dav_access user:rw; }"
    start_nginx origin "0-$((NCPU - 1))"
    ORG_PID=$!
    wait_code "http://127.0.0.1:$ORG_PORT/bench/" 403 || die "origin does not answer: $(tail -3 "$T/nginx-origin/error.log")"
fi

# Does this build know "workers"?  (check-config refuses unknown keys.)
gw_json() { # N PORT [ACCEPT]: a gateway config; "workers" only when the build has it
    local w=""
    [ "$HAS_WORKERS" = 1 ] && w="\"workers\": $1,"
    [ -n "${3:-}" ] && w="$w \"accept\": \"$3\","
    mkdir -p "$T/gw-data-$1"
    cat <<EOF
{"listen": ["127.0.0.1:$2"], "data_dir": "$T/gw-data-$1", "log_level": "warn", $w
 "upstream": {"endpoint": "http://127.0.0.1:$ORG_PORT", "region": "us-east-1", "addressing": "path",
              "access_key": "ORIGINIGNORESTHIS", "secret_key": "origin-ignores-this"},
 "principals": [{"name": "bench", "access_key": "$AK", "secret_key": "$SK"}]}
EOF
}
HAS_WORKERS=1
gw_json 1 "$TGT_PORT" >"$T/probe.json"
if ! "$BIN" check-config -c "$T/probe.json" >"$T/probe.log" 2>&1; then
    grep -q workers "$T/probe.log" || die "check-config: $(cat "$T/probe.log")"
    HAS_WORKERS=0
    note "this build has no \"workers\" key: the gateway runs at N=1 only"
fi

cat >"$T/wrk.lua" <<'EOF'
local f = assert(io.open(os.getenv("BENCH_BODY"), "rb"))
wrk.method = "PUT"
wrk.body = f:read("*a")
f:close()
if os.getenv("BENCH_CLOSE") == "1" then wrk.headers["Connection"] = "close" end
local h = os.getenv("BENCH_HEADERS")
if h and h ~= "" then
    local hf = assert(io.open(h, "r"))
    for line in hf:lines() do
        local k, v = line:match("^([^:]+): (.*)$")
        if k then wrk.headers[k] = v end
    end
    hf:close()
end
EOF

# start TARGET N: start it on the server CPUs, wait until it answers
start_target() {
    local tg=$1 n=$2 srv
    read -r srv _ <<<"$(cpus "$n")"
    if [ "$tg" = nginx ]; then
        nginx_conf "peer-$n" "$TGT_PORT" "$n" "$(nginx_proxy_location origin)" \
            "upstream origin { server 127.0.0.1:$ORG_PORT; keepalive 128; keepalive_requests 10000000; }"
        start_nginx "peer-$n" "$srv"
        TGT_PID=$! TGT_NGINX=peer-$n
        # the origin's answer to GET /bench/: dav 403 (a folder), the sink 200
        wait_code "http://127.0.0.1:$TGT_PORT/bench/" "$([ "$ORIGIN" = sink ] && echo 200 || echo 403)" ||
            die "nginx does not answer"
    else
        local acc=""
        case $tg in gw-*) acc=${tg#gw-} ;; esac
        gw_json "$n" "$TGT_PORT" "$acc" >"$T/gw-$n.json"
        taskset -c "$srv" "$BIN" serve -c "$T/gw-$n.json" </dev/null >"$T/gw-$n.log" 2>&1 &
        TGT_PID=$!
        wait_code "http://127.0.0.1:$TGT_PORT/readyz" 200 || die "gateway not ready: $(tail -5 "$T/gw-$n.log")"
    fi
}
target_pids() { # TARGET
    if [ "$1" = nginx ]; then nginx_pids "$TGT_PID"; else echo "$TGT_PID"; fi
}
# headers TARGET: the signed headers for this run (the gateway only; nginx gets none)
headers() {
    : >"$T/headers"
    if [ "$1" = nginx ]; then
        return
    elif [ -n "${BENCH_PRESIGNED:-}" ]; then
        cp "$BENCH_PRESIGNED/headers" "$T/headers"
    else
        "$PY" "$SIGN" sign "127.0.0.1:$TGT_PORT" /bench/obj "$T/body" "$AK" "$SK" >"$T/headers"
    fi
}
# check TARGET: one PUT as wrk sends it lands whole at the origin; through the
# gateway the same PUT with a payload hash that does not match is refused,
# so the hash is really checked on the path being measured
check() {
    local tg=$1 hdr=() got
    headers "$tg"
    while IFS= read -r l; do hdr+=(-H "$l"); done <"$T/headers"
    rm -f "$T/origin/bench/obj"
    local s0 s1
    s0=$(sink_stats)
    got=$(curl -s -o /dev/null -w '%{http_code}' -T "$T/body" "${hdr[@]}" "http://127.0.0.1:$TGT_PORT/bench/obj")
    case $got in 200 | 201 | 204) ;; *) die "PUT via $tg: HTTP $got" ;; esac
    if [ "$ORIGIN" = sink ]; then
        s1=$(sink_stats)
        [ "${s1% *}" = "$((${s0%% *} + 1)) $BYTES" ] ||
            die "PUT via $tg: the sink saw \"$s0\" then \"$s1\" (requests, last body, total), want one more of $BYTES bytes"
    else
        cmp -s "$T/origin/bench/obj" "$T/body" || die "PUT via $tg: the origin holds other bytes"
    fi
    if [ "$tg" != nginx ]; then
        head -c "$BYTES" /dev/urandom >"$T/other"
        s0=$(sink_stats)
        got=$(curl -s -o /dev/null -w '%{http_code}' -T "$T/other" "${hdr[@]}" "http://127.0.0.1:$TGT_PORT/bench/obj")
        case $got in 4??) ;; *) die "PUT of other bytes under the signed hash via gw: HTTP $got, want 4xx" ;; esac
        s1=$(sink_stats)
        [ "${s1%% *}" = "${s0%% *}" ] || die "PUT of other bytes via gw: refused, but the sink got a whole request ($s0 -> $s1)"
    fi
}
# sink_stats: "REQUESTS LAST TOTAL" of the sink origin (nothing for dav)
sink_stats() {
    [ "$ORIGIN" = sink ] || return 0
    curl -s --max-time 5 "http://127.0.0.1:$ORG_PORT/sink-stats"
}

TARGETS=(gw)
for m in ${BENCH_ACCEPT:-}; do
    case $m in
    acceptor | reuseport) TARGETS+=("gw-$m") ;;
    *) die "BENCH_ACCEPT: \"acceptor\" and/or \"reuseport\", not '$m'" ;;
    esac
done
TARGETS+=(nginx)
RES=$T/results.tsv
: >"$RES"
T0=$(date +%s)
for ((r = 0; r < REPEATS; r++)); do
    for n in "${COUNTS[@]}"; do
        order=("${TARGETS[@]}")
        if [ $((r % 2)) = 1 ]; then
            order=()
            for ((k = ${#TARGETS[@]} - 1; k >= 0; k--)); do order+=("${TARGETS[k]}"); done
        fi
        for tg in "${order[@]}"; do
            if [ "$tg" != nginx ] && [ "$HAS_WORKERS" = 0 ] && [ "$n" != 1 ]; then
                continue
            fi
            case $tg in gw-*) [ "$n" = 1 ] && continue ;; esac # one loop: one way to accept
            read -r srv load <<<"$(cpus "$n")"
            start_target "$tg" "$n"
            # shellcheck disable=SC2046
            pin "$load" $(nginx_pids "$ORG_PID")
            check "$tg"
            conns=${BENCH_CONNS:-$((8 * n < 16 ? 16 : 8 * n))}
            nload=$(taskset -c "$load" nproc)
            thr=${BENCH_WRK_THREADS:-$((nload > 8 ? 8 : nload))}
            [ "$thr" -gt "$conns" ] && thr=$conns
            note "repeat $((r + 1))/$REPEATS: $tg N=$n (server CPUs $srv, load CPUs $load, -t$thr -c$conns)"
            headers "$tg"
            # shellcheck disable=SC2046
            c0=$(cpu_ticks $(target_pids "$tg"))
            # shellcheck disable=SC2046
            o0=$(cpu_ticks $(nginx_pids "$ORG_PID"))
            w0=$(child_ticks)
            BENCH_BODY=$T/body BENCH_HEADERS=$T/headers BENCH_CLOSE=${BENCH_CLOSE:-0} taskset -c "$load" "$WRK" -t"$thr" -c"$conns" \
                -d"${SECS}s" --latency -s "$T/wrk.lua" "http://127.0.0.1:$TGT_PORT/bench/obj" >"$T/wrk.out" 2>&1 ||
                die "wrk failed: $(cat "$T/wrk.out")"
            w1=$(child_ticks)
            # shellcheck disable=SC2046
            c1=$(cpu_ticks $(target_pids "$tg"))
            # shellcheck disable=SC2046
            o1=$(cpu_ticks $(nginx_pids "$ORG_PID"))
            read -r rps p50 p99 nreq errs <<<"$(wrkstats "$T/wrk.out")"
            [ "$errs" = 0 ] || die "$tg N=$n: $errs errors ($(grep -E 'Non-2xx|Socket' "$T/wrk.out" | tr '\n' ' '))"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tg" "$n" "$rps" "$p50" "$p99" "$nreq" "$((c1 - c0))" \
                "$conns" "$((w1 - w0))" "$((o1 - o0))" >>"$RES"
            stop_target
        done
    done
done
ELAPSED=$(($(date +%s) - T0))

echo
echo "== fencegate cores benchmark: signed-payload PUT $((BYTES / 1024)) KiB to the $ORIGIN origin, $(date -u +%Y-%m-%d)," \
    "$NCPU CPUs, ${SECS}s x $REPEATS repeats, $ELAPSED s, load average $(cut -d' ' -f1-3 /proc/loadavg)" \
    "$([ "${BENCH_CLOSE:-0}" = 1 ] && echo ", a new connection per request")"
echo
# medians over the repeats of req/s, p50, p99 and CPU per request; ratio: req/s over the first N's
awk -F'\t' -v hz="$HZ" -v secs="$SECS" -v bytes="$BYTES" -v first="${COUNTS[0]}" -v counts="${COUNTS[*]}" \
    -v hasw="$HAS_WORKERS" -v targets="${TARGETS[*]}" -v ncpu="$NCPU" '
    function med(s,   a, k, i, j, t) {
        k = split(s, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    { key = $1 SUBSEP $2; rps[key] = rps[key] " " $3; p50[key] = p50[key] " " $4; p99[key] = p99[key] " " $5
      cpu[key] = cpu[key] " " ($6 > 0 ? $7 * 1e6 / hz / $6 : 0); conns[key] = $8
      busy[key] = busy[key] " " ($7 / hz / secs)
      wl[key] = wl[key] " " ($6 > 0 ? $9 * 1e6 / hz / $6 : 0)
      ol[key] = ol[key] " " ($6 > 0 ? $10 * 1e6 / hz / $6 : 0) }
    # the req/s this machine allows at these costs per request (us): the target on
    # its N CPUs and the load on the rest, or all of them shared at N >= the CPUs
    function ceiling(n, g, l) {
        if (g <= 0 || l <= 0) return 0
        if (n < ncpu) return (n / g < (ncpu - n) / l ? n / g : (ncpu - n) / l) * 1e6
        return ncpu / (g + l) * 1e6
    }
    END {
        printf "| target | N | conns | req/s | MiB/s | p50 ms | p99 ms | CPU us/req | CPUs busy | scaling | gw/nginx CPU | load CPU us/req (wrk + origin) | ceiling req/s | ceiling scaling |\n"
        printf "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        nc = split(counts, cs, " ")
        nt = split(targets, ts, " ")
        for (t = 1; t <= nt; t++) {
            tg = ts[t]
            for (i = 1; i <= nc; i++) {
                n = cs[i]; key = tg SUBSEP n
                if (tg ~ /^gw-/ && n == 1) continue
                if (!(key in rps)) { printf "| %s | %s | - | n/a (no workers key) | | | | | | | | | | |\n", tg, n; continue }
                r = med(rps[key]); c = med(cpu[key])
                f = (tg ~ /^gw-/ ? "gw" : tg) SUBSEP first
                sc = (f in rps) && med(rps[f]) > 0 ? sprintf("%.2fx", r / med(rps[f])) : "-"
                rel = "-"
                if (tg != "nginx" && (("nginx" SUBSEP n) in cpu) && med(cpu["nginx" SUBSEP n]) > 0)
                    rel = sprintf("%.2fx", c / med(cpu["nginx" SUBSEP n]))
                lw = med(wl[key]); lo = med(ol[key]); l = lw + lo; cl = ceiling(n, c, l)
                csc = (f in rps) && med(rps[f]) > 0 && cl > 0 ? sprintf("%.2fx", cl / med(rps[f])) : "-"
                printf "| %s | %s | %s | %.1f | %.1f | %.2f | %.2f | %.0f | %.2f | %s | %s | %.0f (%.0f + %.0f) | %.0f | %s |\n",
                    tg, n, conns[key], r, r * bytes / 1048576, med(p50[key]), med(p99[key]), c, med(busy[key]), sc, rel,
                    l, lw, lo, cl, csc

            }
        }
    }' "$RES"
echo
echo "CPUs busy: the target's CPU seconds per second of the run (below N: the load generator or the origin held it back);"
echo "scaling: req/s at N over req/s at N=${COUNTS[0]}, same target; gw/nginx CPU: CPU per request, gateway over nginx at the same N"
echo "load CPU: wrk's and the origin's CPU per request; ceiling: the req/s $NCPU CPUs allow at the target's and the load's"
echo "CPU per request (the target on its N CPUs and the load on the rest, or all shared when N >= $NCPU), and that over the"
echo "first N's measured req/s: a scaling the run cannot exceed however well the target scales"
echo "command: FENCEGATE_BIN=$BIN BENCH_ORIGIN=$ORIGIN BENCH_SECS=$SECS BENCH_REPEATS=$REPEATS BENCH_ACCEPT=\"${BENCH_ACCEPT:-}\"" \
    "BENCH_CLOSE=${BENCH_CLOSE:-0}${BENCH_CONNS:+ BENCH_CONNS=$BENCH_CONNS} bash tests/bench/cores_bench.sh ${COUNTS[*]}"
