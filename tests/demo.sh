#!/usr/bin/env bash
# make demo: the zombie story on loopback.  A real Ceph RGW, the gateway with
# an s3-backed election and a fence rule, and two workers run by
# `fencegate lock run`.  Worker A is frozen (SIGSTOP, as a GC pause or a VM
# stall would) past its lease; worker B takes the lock and writes; A wakes up
# and writes with its old token: the gateway refuses it, B's data stays, and
# the audit log says who tried what.  Everything started here is stopped by
# PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${FENCEGATE_BIN:-build/fencegate}
DEMO=$(mktemp -d /tmp/fencegate-demo.XXXXXX)
RGW_DIR=$DEMO/rgw
PIDS=()
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

cleanup() {
    for p in "${PIDS[@]}"; do
        kill -CONT "$p" 2>/dev/null || true
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    bash tests/rgw/rgw.sh stop "$RGW_DIR" >/dev/null 2>&1 || true
    rm -rf "$DEMO"
}
trap cleanup EXIT

say "1. A real S3 on loopback: Ceph RGW"
bash tests/rgw/rgw.sh start "$RGW_DIR" >/dev/null
# shellcheck disable=SC1091
. "$RGW_DIR/env"
echo "RGW at $RGW_ENDPOINT"
export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
export AWS_DEFAULT_REGION=us-east-1 AWS_PAGER= AWS_CONFIG_FILE=$DEMO/aws.cfg
printf '[default]\ns3 =\n    addressing_style = path\n' >"$AWS_CONFIG_FILE"
aws --endpoint-url "$RGW_ENDPOINT" s3api create-bucket --bucket data >/dev/null
aws --endpoint-url "$RGW_ENDPOINT" s3api create-bucket --bucket locks >/dev/null

say "2. The gateway: leases as epoch files in s3://locks, writes to data/orders/ fenced by lock 'orders'"
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$DEMO/gw.json" <<EOF
{"listen": ["127.0.0.1:$PORT"], "data_dir": "$DEMO/data", "gateway_id": "demo-gw",
 "log_level": "warn",
 "upstream": {"endpoint": "$RGW_ENDPOINT", "access_key_env": "RGW_ACCESS_KEY",
              "secret_key_env": "RGW_SECRET_KEY"},
 "election": {"backend": "s3", "bucket": "locks", "default_lease_ms": 4000,
              "min_lease_ms": 3150, "shared_window_ms": 1000},
 "fencing": {"commit_margin_ms": 100, "complete_margin_ms": 200},
 "fences": [{"bucket": "data", "prefix": "orders/", "lock": "orders", "require_token": true}]}
EOF
export RGW_ACCESS_KEY RGW_SECRET_KEY
"$BIN" serve -c "$DEMO/gw.json" 2>"$DEMO/gw.log" &
PIDS+=($!)
GW=http://127.0.0.1:$PORT
for _ in $(seq 100); do
    curl -sf "$GW/readyz" >/dev/null && break
    sleep 0.1
done
curl -sf "$GW/readyz"
export FENCEGATE_URL=$GW

# A worker: writes orders/latest with its token in a loop, printing each result.
cat >"$DEMO/worker.sh" <<'EOF'
#!/usr/bin/env bash
name=$1
for i in $(seq "${2:-6}"); do
    echo "$name (token $FENCING_TOKEN) write #$i" >"/tmp/$name.body.$$"
    if out=$(aws --endpoint-url "$FENCEGATE_URL" s3api put-object --bucket data \
            --key orders/latest --body "/tmp/$name.body.$$" \
            --metadata "fencing-token=$FENCING_TOKEN" 2>&1); then
        echo "   $name: write #$i with token $FENCING_TOKEN accepted"
    else
        echo "   $name: write #$i with token $FENCING_TOKEN REFUSED: $(echo "$out" | grep -o 'StaleFencingToken[^)]*' | head -1)"
    fi
    sleep 0.7
done
rm -f "/tmp/$name.body.$$"
EOF
chmod +x "$DEMO/worker.sh"

say "3. Worker A takes the lock and writes"
"$BIN" lock run orders --holder worker-a --lease-ms 4000 -- "$DEMO/worker.sh" worker-a &
A=$!
PIDS+=($A)
sleep 1.6
say "4. Worker A freezes (SIGSTOP: a long GC pause) and its lease runs out"
kill -STOP "$A"
kill -STOP -- "-$(ps -o pgid= --ppid "$A" | tr -d ' ' | head -1)" 2>/dev/null || true
curl -s "$GW/_fencegate/v1/locks/orders"
echo

say "5. Worker B waits for the lock, gets the next epoch and writes"
"$BIN" lock run orders --holder worker-b --lease-ms 10000 --wait-ms 20000 -- \
    "$DEMO/worker.sh" worker-b 3 || true

say "6. Worker A wakes up, still believing it leads, and writes with its old token"
# The worker resumes first (its lease-keeper, lock run, is still frozen), as
# when a paused process's threads do not all wake at once: this is the write
# only the gateway can stop.
kill -CONT -- "-$(ps -o pgid= --ppid "$A" | tr -d ' ' | head -1)" 2>/dev/null || true
sleep 2.5
say "   ... then A's lock run wakes, finds the lease lost, and stops worker A"
kill -CONT "$A"
wait "$A" || echo "   (lock run exit $?: lease lost)"

say "7. What S3 holds: worker B's data, written by epoch $(aws --endpoint-url "$RGW_ENDPOINT" s3api head-object --bucket data --key orders/latest --query 'Metadata."fencing-epoch"' --output text)"
aws --endpoint-url "$RGW_ENDPOINT" s3 cp s3://data/orders/latest - 2>/dev/null

say "8. The audit log: every refused zombie write, with both tokens"
"$BIN" audit --data-dir "$DEMO/data" --lock orders
curl -s "$GW/_fencegate/v1/fences"
