#!/bin/bash
# sigv4_cost.sh: what SigV4 costs a small request, in instructions
# (callgrind), a figure the machine's other load cannot disturb:
#
#   tests/bench/sigv4_cost.sh [BENCH_BIN [BASELINE_BENCH_BIN]]
#
# Runs tests/bench/sigv4_bench.c (BENCH_BIN, build/tests/bench/sigv4_bench)
# under valgrind --tool=callgrind for N rounds and for none, and prints the
# instructions per request of the verification (the inbound principal's
# signature, key cache warm) and of the re-signing (the upstream's, its own
# cache).  With BASELINE_BENCH_BIN (the same program built against another
# tree, e.g. `git archive COMMIT`), the same figures for it, side by side.
# Environment: SIGV4_COST_N (rounds, 2000).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/tests/bench/sigv4_bench}
BASE=${2:-}
N=${SIGV4_COST_N:-2000}
command -v valgrind >/dev/null || { echo "sigv4_cost: valgrind missing" >&2; exit 2; }
T=$(mktemp -d /tmp/fg-sigv4cost.XXXXXX)
trap 'rm -rf "$T"' EXIT

# ir BIN WHAT ROUNDS: total instructions of one run
ir() {
    valgrind --tool=callgrind --callgrind-out-file="$T/cg" "$1" "$2" "$3" >/dev/null 2>"$T/err" ||
        { cat "$T/err" >&2; exit 1; }
    sed -n 's/^==[0-9]*== Collected : //p' "$T/err"
}

# per BIN WHAT: instructions per round, setup subtracted
per() {
    local full none
    full=$(ir "$1" "$2" "$N")
    none=$(ir "$1" "$2" 0)
    awk -v f="$full" -v z="$none" -v n="$N" 'BEGIN { printf "%.0f", (f - z) / n }'
}

echo "== SigV4 cost: callgrind, $N rounds, $(date -u '+%Y-%m-%d %H:%M UTC')"
v=$(per "$BIN" verify)
s=$(per "$BIN" sign)
if [ -z "$BASE" ]; then
    echo "| step | Ir per request |"
    echo "| --- | ---: |"
    echo "| verify (inbound) | $v |"
    echo "| re-sign (upstream) | $s |"
    exit 0
fi
bv=$(per "$BASE" verify)
bs=$(per "$BASE" sign)
echo "| step | Ir per request | baseline | difference |"
echo "| --- | ---: | ---: | ---: |"
for row in "verify (inbound)|$v|$bv" "re-sign (upstream)|$s|$bs"; do
    IFS='|' read -r name a b <<<"$row"
    echo "| $name | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%+.1f %%", 100 * (a - b) / b }') |"
done
