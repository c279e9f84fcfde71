#!/bin/bash
# sigv4_cost.sh: what SigV4 costs a small request, and an aws-chunked body
# its chunk signatures, in instructions (callgrind) and heap allocations
# (memcheck's count), figures the machine's other load cannot disturb:
#
#   tests/bench/sigv4_cost.sh [BENCH_BIN [BASELINE_BENCH_BIN]]
#
# Runs tests/bench/sigv4_bench.c (BENCH_BIN, build/tests/bench/sigv4_bench)
# under valgrind for N rounds and for none, and prints per request the
# instructions and allocations of the verification (the inbound principal's
# signature, key cache warm) and of the re-signing (the upstream's, its own
# cache), and per body and per chunk those of decoding a signed 1 MiB
# aws-chunked body in 64 KiB and in 8 KiB chunks; then, with body_bench from
# the same folder (tests/bench/body_bench.c), those of checking a body's
# x-amz-content-sha256 as gateway/proxy/body.c streams it, 1 KiB and 1 MiB.
# With BASELINE_BENCH_BIN (the same programs built against another tree,
# e.g. `git archive COMMIT`), the same figures for it, side by side.
# Environment: SIGV4_COST_N (rounds of the request cases, 2000),
# SIGV4_COST_CHUNKED_N (rounds of the chunked cases, 10).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/tests/bench/sigv4_bench}
BASE=${2:-}
N=${SIGV4_COST_N:-2000}
NC=${SIGV4_COST_CHUNKED_N:-10}
command -v valgrind >/dev/null || { echo "sigv4_cost: valgrind missing" >&2; exit 2; }
T=$(mktemp -d /tmp/fg-sigv4cost.XXXXXX)
trap 'rm -rf "$T"' EXIT

# ir BIN ARGS...: total instructions of one run
ir() {
    local bin=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$T/cg" "$bin" "$@" >/dev/null 2>"$T/err" ||
        { cat "$T/err" >&2; exit 1; }
    sed -n 's/^==[0-9]*== Collected : //p' "$T/err"
}

# allocs BIN ARGS...: heap allocations of one run
allocs() {
    local bin=$1
    shift
    valgrind --tool=memcheck "$bin" "$@" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
    sed -n 's/^==[0-9]*==   total heap usage: \([0-9,]*\) allocs.*/\1/p' "$T/err" | tr -d ,
}

# per FN ROUNDS BIN WHAT [CHUNK]: FN's figure per round, setup subtracted
per() {
    local fn=$1 rounds=$2 bin=$3 what=$4 full none
    shift 4
    full=$("$fn" "$bin" "$what" "$rounds" "$@")
    none=$("$fn" "$bin" "$what" 0 "$@")
    awk -v f="$full" -v z="$none" -v n="$rounds" 'BEGIN { printf "%.1f", (f - z) / n }'
}

# row NAME BIN ROUNDS DIVISOR WHAT [CHUNK]: "Ir|allocs" per round / DIVISOR
row() {
    local bin=$1 rounds=$2 div=$3 i a
    shift 3
    i=$(per ir "$rounds" "$bin" "$@")
    a=$(per allocs "$rounds" "$bin" "$@")
    awk -v i="$i" -v a="$a" -v d="$div" 'BEGIN { printf "%.0f|%.2f", i / d, a / d }'
}

# 1 MiB in 64 KiB chunks is 16 chunks and the final one, in 8 KiB 128 and 1.
# Fields: name | program (sigv4 or body) | rounds | divisor | case | size
CASES=("verify (inbound), per request|sigv4|$N|1|verify"
       "re-sign (upstream), per request|sigv4|$N|1|sign"
       "aws-chunked 1 MiB in 64 KiB chunks, per body|sigv4|$NC|1|chunked|65536"
       "aws-chunked 1 MiB in 64 KiB chunks, per chunk|sigv4|$NC|17|chunked|65536"
       "aws-chunked 1 MiB in 8 KiB chunks, per chunk|sigv4|$NC|129|chunked|8192"
       "x-amz-content-sha256 body of 1 KiB, per request|body|$N|1|sha256|1024"
       "x-amz-content-sha256 body of 1 MiB, per body|body|$NC|1|sha256|1048576")

# prog BENCH_BIN PROGRAM: the program's binary beside BENCH_BIN
prog() {
    if [ "$2" = sigv4 ]; then echo "$1"; else echo "$(dirname "$1")/body_bench"; fi
}

echo "== SigV4 cost: callgrind and memcheck, $N request rounds, $NC body rounds, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "$BASE" ]; then
    echo "| step | Ir | allocations |"
    echo "| --- | ---: | ---: |"
else
    echo "| step | Ir | allocations | baseline Ir | baseline allocations | Ir difference |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: |"
fi
for c in "${CASES[@]}"; do
    IFS='|' read -r name p rounds div what chunk <<<"$c"
    IFS='|' read -r i a <<<"$(row "$(prog "$BIN" "$p")" "$rounds" "$div" "$what" ${chunk:+"$chunk"})"
    if [ -z "$BASE" ]; then
        echo "| $name | $i | $a |"
        continue
    fi
    IFS='|' read -r bi ba <<<"$(row "$(prog "$BASE" "$p")" "$rounds" "$div" "$what" ${chunk:+"$chunk"})"
    echo "| $name | $i | $a | $bi | $ba | $(awk -v a="$i" -v b="$bi" 'BEGIN { printf "%+.1f %%", 100 * (a - b) / b }') |"
done
