#!/usr/bin/env bash
# cores_kit.sh DIR [FENCEGATE_BIN [SINK]]: a folder that runs make bench-cores's
# programs on a machine without Debian 12's packages (make bench-cores-kit).
#
# DIR/real/   the gateway, wrk, nginx and curl, as built or installed here,
#             and the sink origin (SINK: tests/bench/sink_origin.c) when given
# DIR/lib/    every shared library they load, and Debian 12's loader
# DIR/bin/    one wrapper each, which starts the program under the carried
#             loader with the carried libraries (so neither the other
#             machine's glibc nor its libraries matter)
# On the other machine (Linux x86-64; python3 with its standard library, or
# BENCH_PRESIGNED, see cores_bench.sh):
#   PATH=DIR/bin:$PATH FENCEGATE_BIN=DIR/bin/fencegate NGINX=DIR/bin/nginx \
#     WRK=DIR/bin/wrk bash tests/bench/cores_bench.sh 1 2 4 8 16
# (with BENCH_ORIGIN=sink BENCH_SINK=DIR/bin/sink_origin for the sink origin)
set -euo pipefail
[ $# -ge 1 ] || {
    echo "usage: cores_kit.sh DIR [FENCEGATE_BIN [SINK]]" >&2
    exit 2
}
DIR=$1
BIN=${2:-build/fencegate}
progs=("$BIN" "$(command -v wrk)" "${NGINX:-/usr/sbin/nginx}" "$(command -v curl)")
[ -n "${3:-}" ] && progs+=("$3")
rm -rf "$DIR"
mkdir -p "$DIR/real" "$DIR/lib" "$DIR/bin"
for p in "${progs[@]}"; do
    [ -x "$p" ] || {
        echo "cores_kit: $p missing" >&2
        exit 1
    }
    n=$(basename "$p")
    cp "$p" "$DIR/real/$n"
    ldd "$p" | awk '/=>/ && $3 ~ /^\// {print $3} /ld-linux/ && $1 ~ /^\// {print $1}' |
        while read -r l; do cp -nL "$l" "$DIR/lib/"; done
    cat >"$DIR/bin/$n" <<EOF
#!/bin/sh
# $n with the libraries and the loader it was built against (tests/bench/cores_kit.sh)
d=\$(dirname "\$(readlink -f "\$0")")/..
exec "\$d/lib/ld-linux-x86-64.so.2" --library-path "\$d/lib" "\$d/real/$n" "\$@"
EOF
    chmod +x "$DIR/bin/$n"
done
[ -e "$DIR/lib/ld-linux-x86-64.so.2" ] || {
    echo "cores_kit: no ld-linux-x86-64.so.2 among the libraries" >&2
    exit 1
}
echo "cores_kit: $DIR ($(du -sh "$DIR" | cut -f1)): $(ls "$DIR/bin" | tr '\n' ' ')"
