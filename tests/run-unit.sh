#!/usr/bin/env bash
# Runs every unit-test binary given, lets each print its own cmocka summary,
# and ends with one plain "N passed, N failed" line over all binaries.
set -u
pass=0
fail=0
failed=()
for t in "$@"; do
    echo "== $t"
    if "$t"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed+=("$t")
    fi
done
if [ "$fail" -ne 0 ]; then
    echo "failed unit test binaries: ${failed[*]}"
fi
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
