# shellcheck shell=bash
# tests/bench/lib.sh: what the proxy benches share (sourced by proxy_bench.sh,
# proxy_bench_dav.sh, cores_bench.sh, metrics_cost.sh and request_cost.sh):
# stopping only our own processes, /proc readings, waiting for an HTTP answer,
# booting nginx in a prefix of its own, reading wrk's output, keeping or
# removing the temp dir at exit, and counting a gateway's instructions.
#
# The sourcing script sets, before calling anything here:
#   T        its temp dir (every process we start names it on its command line)
#   NGINX    the nginx binary
#   BENCH    its name, for nginx.conf's first line
# Nothing here is ever killed by name: stop_pid signals a PID only while its
# command line still names $T, so a recycled PID is left alone.

# ours PID: true if PID is alive and its command line mentions $T.
ours() {
    [ -n "$1" ] && { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qF -- "$T"
}

# stop_pid PID: TERM, up to 5 s, then KILL; reaps it if it is our child.
stop_pid() {
    local pid=$1 i
    ours "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do
        ours "$pid" || break
        # a zombie child still shows a cmdline-less /proc entry: reap it
        [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
        sleep 0.1
    done
    ours "$pid" && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

# cpu_times PID...: "TOTAL USER", utime+stime and utime alone, in ticks,
# summed over PIDs, each /proc/PID/stat read once (both at one instant, so
# TOTAL - USER is the system time).  The comm field may hold spaces, so the
# fields are counted after its closing parenthesis ($12 is utime, field 14;
# $13 stime).
cpu_times() {
    local p t=0 u=0 v w
    for p in "$@"; do
        read -r v w < <(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13, $12}') || true
        t=$((t + ${v:-0})) u=$((u + ${w:-0}))
    done
    echo "$t $u"
}

# cpu_ticks PID...: utime+stime summed over PIDs
cpu_ticks() {
    local t _
    read -r t _ <<<"$(cpu_times "$@")"
    echo "$t"
}

# status_kb FIELD PID...: a /proc/PID/status kB field (VmHWM, VmRSS) summed over PIDs
status_kb() {
    local f=$1 p s=0 v
    shift
    for p in "$@"; do
        v=$(awk -v f="$f:" '$1 == f {print $2}' "/proc/$p/status" 2>/dev/null) || v=0
        s=$((s + ${v:-0}))
    done
    echo "$s"
}

# nginx_pids PID: an nginx master and its workers
# shellcheck disable=SC2046 # one PID a word
nginx_pids() { echo "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); }

# wait_code URL WANT: until URL answers with HTTP status WANT (any: any answer), 15 s
wait_code() {
    local i c
    for ((i = 0; i < 150; i++)); do
        c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1" || true)
        if [ "$c" = "$2" ] || { [ "$2" = any ] && [ "$c" != 000 ]; }; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# nginx_conf NAME PORT WORKERS SERVER-BODY [HTTP-EXTRA [MAIN-EXTRA]]: $T/nginx-NAME/nginx.conf,
# an nginx on 127.0.0.1:PORT with its own prefix (pid, logs, temp paths under
# $T/nginx-NAME), WORKERS worker processes, SERVER-BODY inside its one server
# block, HTTP-EXTRA (an upstream block) in http and MAIN-EXTRA (e.g.
# "master_process off;") at the top level.
nginx_conf() {
    local user=""
    # as root, nginx's workers would drop to nobody, who cannot enter the 0700
    # temp dir: keep them as the user who runs the bench
    [ "$(id -u)" = 0 ] && user="user root root;"
    mkdir -p "$T/nginx-$1/tmp"
    cat >"$T/nginx-$1/nginx.conf" <<EOF
# $BENCH: $1 (prefix $T/nginx-$1)
daemon off;
$user
worker_processes $3;
${6:-}
pid $T/nginx-$1/nginx.pid;
error_log $T/nginx-$1/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $T/nginx-$1/tmp/body;
    proxy_temp_path $T/nginx-$1/tmp/proxy;
    fastcgi_temp_path $T/nginx-$1/tmp/fastcgi;
    uwsgi_temp_path $T/nginx-$1/tmp/uwsgi;
    scgi_temp_path $T/nginx-$1/tmp/scgi;
    ${5:-}
    server {
        listen 127.0.0.1:$2;
        client_max_body_size 0;
        keepalive_requests 10000000;
        $4
    }
}
EOF
}

# nginx_proxy_location UPSTREAM: a plain streaming reverse proxy's location
# block (HTTP/1.1 keep-alive to the upstream block UPSTREAM, Host passed
# through, no request or response buffering), for nginx_conf's SERVER-BODY.
nginx_proxy_location() {
    cat <<EOF
location / {
            proxy_pass http://$1;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;
            proxy_request_buffering off;
            proxy_buffering off;
            proxy_read_timeout 300s;
            proxy_send_timeout 300s;
        }
EOF
}

# start_nginx NAME [CPU]: starts nginx-NAME in the background (on CPU with
# taskset when given); the caller takes its PID from $!.
start_nginx() {
    local pin=()
    [ -n "${2:-}" ] && pin=(taskset -c "$2")
    "${pin[@]}" "$NGINX" -p "$T/nginx-$1/" -c "$T/nginx-$1/nginx.conf" -e "$T/nginx-$1/error.log" \
        </dev/null >"$T/nginx-$1/stdout.log" 2>&1 &
}

# wrkstats FILE: wrk --latency output -> "rps p50_ms p99_ms requests errors"
# (proxy_bench_helper.py wrkstats in awk: no interpreter start per run)
wrkstats() {
    awk 'function ms(v) {
            if (v ~ /us$/) return v * 0.001; if (v ~ /ms$/) return v + 0
            if (v ~ /m$/) return v * 60000; if (v ~ /s$/) return v * 1000; return v }
        /Requests\/sec:/ {rps = $2}
        $1 == "50%" {p50 = ms($2)} $1 == "99%" {p99 = ms($2)}
        / requests in / {n = $1}
        /Non-2xx or 3xx responses:/ {e += $NF}
        /Socket errors:/ {gsub(/,/, ""); e += $4 + $6 + $8 + $10}
        END {printf "%.1f %.3f %.3f %d %d\n", rps, p50, p99, n, e}' "$1"
}

# finish_tmp RC LOGS [KEEP]: the end of a bench's EXIT trap: keep $T when
# BENCH_KEEP=1, KEEP=1 or RC != 0 (LOGS says what to read there), else remove
# it; then exit RC.
finish_tmp() {
    if [ "${BENCH_KEEP:-0}" = 1 ] || [ "${3:-0}" = 1 ] || [ "$1" -ne 0 ]; then
        echo "${BENCH%.sh}: kept $T (logs: $2)" >&2
    else
        rm -rf "$T"
    fi
    exit "$1"
}

# ---- instruction counts (callgrind): metrics_cost.sh, request_cost.sh ----

# dav_origin: nginx-origin on ORG_PORT, a dav server of $T/origin (made here,
# with bench/obj: 1 KiB), and $T/body (1 KiB); ORG_PID set, or exits.
dav_origin() {
    mkdir -p "$T/origin/bench"
    head -c 1024 /dev/urandom >"$T/origin/bench/obj"
    head -c 1024 /dev/urandom >"$T/body"
    nginx_conf origin "$ORG_PORT" 1 "root $T/origin;
        location / { dav_methods PUT DELETE; create_full_put_path on; dav_access user:rw; }"
    start_nginx origin
    # shellcheck disable=SC2034 # the sourcing script's, to stop at exit
    ORG_PID=$!
    wait_code "http://127.0.0.1:$ORG_PORT/bench/obj" 200 || { echo "origin down" >&2; exit 1; }
}

# cg_serve BIN CONFIG: the gateway under callgrind with instrumentation off,
# its callgrind files $T/cg.out.PID; GW_PID set once it answers /readyz on
# GW_PORT, or exits with its log.
cg_serve() {
    cg_start "http://127.0.0.1:$GW_PORT/readyz" "$1" serve -c "$2"
}

# cg_start READY-URL CMD...: CMD under callgrind as cg_serve runs the
# gateway (GW_PID set once READY-URL answers 200); for another server
# measured alike, such as nginx in one process (master_process off).
cg_start() {
    local ready=$1
    shift
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$T/cg.out.%p" \
        "$@" </dev/null >"$T/gw.log" 2>&1 &
    GW_PID=$!
    local i
    for ((i = 0; i < 20; i++)); do # valgrind starts slowly: up to 5 minutes
        wait_code "$ready" 200 && break
        kill -0 "$GW_PID" 2>/dev/null || break # it exited: no use waiting
    done
    if [ "$i" -ge 20 ] || ! kill -0 "$GW_PID" 2>/dev/null; then
        echo "${BENCH%.sh}: $1 did not become ready:" >&2
        tail "$T/gw.log" >&2
        exit 1
    fi
}

# cg_window NAME CMD...: CMD run with the gateway's instrumentation on, from
# zero; prints the path of the callgrind file dumped as NAME.
cg_window() {
    local name=$1
    shift
    callgrind_control -i on "$GW_PID" >/dev/null 2>&1
    callgrind_control -z "$GW_PID" >/dev/null 2>&1
    "$@"
    callgrind_control -d "$name" "$GW_PID" >/dev/null 2>&1
    callgrind_control -i off "$GW_PID" >/dev/null 2>&1
    # shellcheck disable=SC2012 # our own names: cg.out.PID[.PART]
    ls -t "$T"/cg.out.* | head -1
}

# cg_setup NAME: for an instruction-count script NAME (metrics_cost,
# request_cost): checks valgrind's tools and nginx, makes $T on tmpfs, and
# at exit stops GW_PID and ORG_PID and removes $T.  Sets ROOT, NGINX, PY,
# HELPER, BENCH, T.
# shellcheck disable=SC2034 # PY and HELPER are the sourcing script's
cg_setup() {
    ROOT=$PWD
    NGINX=${NGINX:-/usr/sbin/nginx}
    PY=/usr/bin/python3
    HELPER=$ROOT/tests/bench/proxy_bench_helper.py
    BENCH=$1.sh
    local t
    for t in valgrind callgrind_control callgrind_annotate "$NGINX"; do
        command -v "$t" >/dev/null || { echo "$1: $t missing" >&2; exit 2; }
    done
    T=$(mktemp -d "/dev/shm/fg-$1.XXXXXX")
    ORG_PID="" GW_PID=""
    trap cg_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

cg_cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_pid "$GW_PID"
    stop_pid "$ORG_PID"
    rm -rf "$T"
    exit "$rc"
}
