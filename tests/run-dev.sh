#!/usr/bin/env bash
# run-dev.sh (make run): a local Ceph RGW on loopback plus the gateway with
# deploy/dev.json, in the foreground.  Builds nothing (make already did).
#
#   tests/run-dev.sh            run until Ctrl-C (or RUN_SECONDS)
#   tests/run-dev.sh --once     boot everything, smoke-test a PUT/GET through
#                               the gateway with the aws cli, stop, exit 0/1
#
# RGW runs under build/dev/rgw on the port of deploy/dev.json's
# upstream.endpoint (7480); buckets `data` and `locks` are created.  An RGW
# still running there from an earlier run (its recorded PIDs alive and
# answering) is reused.  On exit (Ctrl-C, SIGTERM, RUN_SECONDS, --once) the
# gateway and RGW are stopped by PID (RGW is kept with KEEP_RGW=1).
#
# Environment:
#   RUN_SECONDS=N   stop after N seconds (0 = until Ctrl-C).  With CI=true or
#                   when stdin is not a terminal and RUN_SECONDS is unset,
#                   --once is the default, so it never hangs unattended.
#   KEEP_RGW=1      leave RGW running on exit (reuse it for fast test runs:
#                   FENCEGATE_RGW_ENV=build/dev/rgw/env make integration)
#   FENCEGATE_BIN   gateway binary (default build/fencegate)
#   DEV_CONFIG      config file (default deploy/dev.json)
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_PROXY=127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY} no_proxy=127.0.0.1,localhost${no_proxy:+,$no_proxy}
ROOT=$(pwd)

ONCE=0
for a in "$@"; do
    case "$a" in
    --once) ONCE=1 ;;
    -h | --help)
        sed -n '2,24p' "$0"
        exit 0
        ;;
    *)
        echo "run-dev.sh: unknown argument $a (try --help)" >&2
        exit 2
        ;;
    esac
done
if [ -z "${RUN_SECONDS:-}" ] && [ "$ONCE" -eq 0 ] &&
    { [ "${CI:-}" = true ] || ! [ -t 0 ]; }; then
    echo "run-dev.sh: CI=true or no terminal and RUN_SECONDS unset: running --once"
    ONCE=1
fi
RUN_SECONDS=${RUN_SECONDS:-0}

BIN=${FENCEGATE_BIN:-build/fencegate}
CONFIG=${DEV_CONFIG:-deploy/dev.json}
RGW_DIR=$ROOT/build/dev/rgw
RGW_SH=$ROOT/tests/rgw/rgw.sh

die() {
    echo "run-dev.sh: $*" >&2
    exit 1
}

[ -x "$BIN" ] || die "$BIN not found: run make first"
[ -f "$CONFIG" ] || die "$CONFIG not found"

# Read what we need from the config: upstream port, env var names for the
# upstream keys, listen address, first principal (if any).
eval "$(/usr/bin/python3 - "$CONFIG" <<'EOF'
import json, shlex, sys
from urllib.parse import urlsplit
c = json.load(open(sys.argv[1]))
up = c.get("upstream", {})
u = urlsplit(up.get("endpoint", "http://127.0.0.1:7480"))
listen = (c.get("listen") or ["127.0.0.1:9000"])[0]
p = (c.get("principals") or [{}])[0]
out = {
    "UP_HOST": u.hostname or "",
    "UP_PORT": str(u.port or 80),
    "AK_ENV": up.get("access_key_env", "AWS_ACCESS_KEY_ID"),
    "SK_ENV": up.get("secret_key_env", "AWS_SECRET_ACCESS_KEY"),
    "LISTEN": listen,
    "DATA_DIR": c.get("data_dir", ""),
    "P_AK": p.get("access_key", ""),
    "P_SK": p.get("secret_key", ""),
    "P_SK_ENV": p.get("secret_key_env", ""),
}
for k, v in out.items():
    print(f"{k}={shlex.quote(str(v))}")
EOF
)"
case "$UP_HOST" in
127.0.0.1 | localhost) ;;
*) die "$CONFIG: upstream.endpoint host is $UP_HOST; run-dev.sh boots RGW on 127.0.0.1 only" ;;
esac
GW_URL=http://$LISTEN

RGW_TOUCHED=0 # set once RGW is ours to stop (started or reused)
GW_PID=
TIMER_PID=

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$TIMER_PID" ]; then
        kill "$TIMER_PID" 2>/dev/null || true
    fi
    if [ -n "$GW_PID" ] && kill -0 "$GW_PID" 2>/dev/null; then
        echo "run-dev.sh: stopping gateway (pid $GW_PID)"
        kill -TERM "$GW_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$GW_PID" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$GW_PID" 2>/dev/null; then
            echo "run-dev.sh: gateway ignored SIGTERM for 10 s; SIGKILL"
            kill -KILL "$GW_PID" 2>/dev/null || true
        fi
        wait "$GW_PID" 2>/dev/null || true
    fi
    if [ "$RGW_TOUCHED" -eq 1 ] && [ "${KEEP_RGW:-0}" != 1 ]; then
        echo "run-dev.sh: stopping RGW ($RGW_DIR)"
        bash "$RGW_SH" stop "$RGW_DIR" || true
    elif [ -f "$RGW_DIR/pids" ]; then
        echo "run-dev.sh: RGW left running (stop: tests/rgw/rgw.sh stop $RGW_DIR)"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- RGW
if bash "$RGW_SH" status "$RGW_DIR" 2>/dev/null &&
    grep -qx "RGW_PORT=$UP_PORT" "$RGW_DIR/env"; then
    echo "run-dev.sh: reusing the RGW running in $RGW_DIR"
    RGW_TOUCHED=1
else
    bash "$RGW_SH" stop "$RGW_DIR" 2>/dev/null || true
    if ! /usr/bin/python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' "$UP_PORT" 2>/dev/null; then
        die "port $UP_PORT (upstream.endpoint of $CONFIG) is in use by something else"
    fi
    RGW_TOUCHED=1
    bash "$RGW_SH" start "$RGW_DIR" "$UP_PORT"
fi
# shellcheck disable=SC1091
. "$RGW_DIR/env"

s3_rgw() { # METHOD PATH -> HTTP status, straight to RGW
    curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --max-time 10 -X "$1" \
        -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
        --aws-sigv4 "aws:amz:us-east-1:s3" --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" \
        "$RGW_ENDPOINT$2"
}
for b in data locks; do
    code=$(s3_rgw PUT "/$b")
    case "$code" in
    200 | 409) ;;
    *) die "creating bucket $b at RGW: HTTP $code" ;;
    esac
done

# ---- gateway
[ -n "$DATA_DIR" ] && mkdir -p "$DATA_DIR"
export "$AK_ENV=$RGW_ACCESS_KEY" "$SK_ENV=$RGW_SECRET_KEY"
# Own session: a terminal Ctrl-C reaches only this script, which then sends
# the gateway exactly one SIGTERM (a second signal would skip its drain).
setsid "$BIN" serve -c "$CONFIG" </dev/null &
GW_PID=$!

ready=0
for _ in $(seq 1 200); do
    kill -0 "$GW_PID" 2>/dev/null || break
    if [ "$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --max-time 1 "$GW_URL/healthz")" = 200 ]; then
        ready=1
        break
    fi
    sleep 0.05
done
if [ "$ready" -ne 1 ]; then
    if ! kill -0 "$GW_PID" 2>/dev/null; then
        wait "$GW_PID" && rc=0 || rc=$?
        GW_PID=
        die "gateway exited ($rc) before /healthz answered"
    fi
    die "gateway not answering $GW_URL/healthz after 10 s"
fi

# Keys for clients of the gateway: the first principal's, else (no
# principals: the gateway does not check signatures yet) RGW's.
if [ -n "$P_AK" ]; then
    AK=$P_AK
    if [ -n "$P_SK" ]; then
        SK=$P_SK SK_SHOWN=$P_SK
    else
        SK=${!P_SK_ENV:-} SK_SHOWN="\$$P_SK_ENV"
    fi
else
    AK=$RGW_ACCESS_KEY SK=$RGW_SECRET_KEY SK_SHOWN=$RGW_SECRET_KEY
fi
cat <<EOF

fencegate is up: $GW_URL  (pid $GW_PID; upstream RGW $RGW_ENDPOINT, logs in $RGW_DIR/log)
config $CONFIG; buckets: data, locks.  Try it in another shell:

  export AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK_SHOWN AWS_DEFAULT_REGION=us-east-1
  echo hello > /tmp/hello.txt
  aws --endpoint-url $GW_URL s3 cp /tmp/hello.txt s3://data/hello.txt
  aws --endpoint-url $GW_URL s3 ls s3://data/
  # fenced writes (data/orders/ needs a token): take the lock, then write with its token
  curl -s -X POST $GW_URL/_fencegate/v1/locks/orders/acquire -d '{"holder":"me","lease_ms":60000}'
  aws --endpoint-url $GW_URL s3api put-object --bucket data --key orders/1 --body /tmp/hello.txt \\
      --metadata fencing-token=TOKEN,fencing-lock=orders

  # the tests against this RGW, without booting another:
  FENCEGATE_RGW_ENV=$RGW_DIR/env /usr/bin/python3 -m pytest -q tests/integration

EOF

if [ "$ONCE" -eq 1 ]; then
    tmp=$(mktemp -d)
    head -c 100000 /dev/urandom >"$tmp/obj"
    export AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_DEFAULT_REGION=us-east-1
    export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_PAGER=
    ok=1
    /usr/bin/aws --endpoint-url "$GW_URL" s3 cp "$tmp/obj" s3://data/run-dev-once.bin >/dev/null &&
        /usr/bin/aws --endpoint-url "$GW_URL" s3 cp s3://data/run-dev-once.bin "$tmp/back" >/dev/null &&
        cmp -s "$tmp/obj" "$tmp/back" || ok=0
    rm -rf "$tmp"
    if [ "$ok" -eq 1 ]; then
        echo "run-dev.sh --once: PUT/GET through the gateway OK"
        exit 0
    fi
    echo "run-dev.sh --once: PUT/GET through the gateway FAILED" >&2
    exit 1
fi

if [ "$RUN_SECONDS" -gt 0 ]; then
    echo "run-dev.sh: stopping in $RUN_SECONDS s (RUN_SECONDS)"
    sleep "$RUN_SECONDS" &
    TIMER_PID=$!
    done_pid=
    wait -n -p done_pid "$GW_PID" "$TIMER_PID" && rc=0 || rc=$?
    if [ "$done_pid" = "$TIMER_PID" ]; then
        TIMER_PID=
        echo "run-dev.sh: RUN_SECONDS elapsed"
        exit 0 # cleanup stops the gateway and RGW
    fi
else
    echo "run-dev.sh: Ctrl-C stops the gateway and RGW"
    wait "$GW_PID" && rc=0 || rc=$?
fi
GW_PID=
echo "run-dev.sh: gateway exited ($rc)"
exit "$rc"
