#!/usr/bin/env bash
# make check-deps: the module map (docs/DESIGN.md "Parts and the rule between them"), enforced on
# #include lines.  One line per folder: the folders of ours it may include
# (besides itself), then the libraries it may include.  A folder not listed
# fails the check, so a new room must be placed on the map.
set -euo pipefail
cd "$(dirname "$0")/.."

# folder | may include (ours) | libraries
MAP='
common             | - | -
store              | common | lmdb
election           | common store | jansson event2
gateway/base       | common | jansson
gateway/s3         | common gateway/base | openssl expat
gateway/net        | common | event2
gateway/http       | common gateway/base gateway/net | event2 openssl llhttp
gateway/fence      | common store election gateway/base gateway/s3 gateway/net | event2
gateway/upstream   | common gateway/base gateway/net | event2 curl llhttp openssl
gateway/s3client   | common store election gateway/base gateway/s3 gateway/net gateway/upstream | event2
gateway/api        | common store election gateway/base gateway/s3 gateway/net gateway/http gateway/fence | jansson
gateway/proxy      | common store election gateway/base gateway/s3 gateway/net gateway/http gateway/fence gateway/upstream gateway/s3client gateway/api | event2
gateway/cli        | common store election gateway/base gateway/s3 gateway/net gateway/http gateway/fence gateway/upstream gateway/s3client gateway/api gateway/proxy | event2 jansson curl
'
# Narrower rules inside a folder: library -> the only files that may include it.
ONLY='
jansson   election/lockfile.c gateway/base/config.c gateway/base/config_int.h gateway/base/json_table.c gateway/base/json_table.h gateway/api/ gateway/cli/lock.c
curl      gateway/upstream/curl gateway/cli/apiclient.c
openssl   gateway/s3/ gateway/http/tls.c gateway/upstream/lean_tls.c
'
lib_rx() {
    case $1 in
    lmdb) echo '<lmdb\.h>' ;; jansson) echo '<jansson\.h>' ;; expat) echo '<expat\.h>' ;;
    llhttp) echo '<llhttp\.h>' ;; event2) echo '<event2/' ;; curl) echo '<curl/' ;; openssl) echo '<openssl/' ;;
    esac
}
ALL_LIBS="lmdb jansson expat llhttp event2 curl openssl"
fail=0
declare -A placed
while IFS="|" read -r dir ours libs; do
    dir=$(echo $dir); ours=$(echo $ours); libs=$(echo $libs)
    [ -n "$dir" ] || continue
    placed[$dir]=1
    files=$(ls "$dir"/*.[ch] 2>/dev/null || true)
    [ -n "$files" ] || { echo "check-deps: $dir: no sources (stale map?)"; fail=1; continue; }
    # ours: every "dir/..." include must name this folder or an allowed one
    allowed="$dir"; [ "$ours" = - ] || allowed="$allowed $ours"
    while IFS= read -r hit; do
        inc=${hit#*#include \"}; inc=${inc%%\"*}; incdir=${inc%/*}
        ok=0; for a in $allowed; do [ "$incdir" = "$a" ] && ok=1; done
        [ $ok = 1 ] || { echo "check-deps: $hit  ($dir may not include $incdir/)"; fail=1; }
    done < <(grep -HnE '#include "(common|store|election|gateway)/' $files || true)
    for lib in $ALL_LIBS; do
        case " $libs " in *" $lib "*) continue ;; esac
        if grep -HnE "#include $(lib_rx "$lib")" $files; then
            echo "check-deps: $dir may not include $lib"; fail=1
        fi
    done
done <<<"$MAP"
# every folder with sources is on the map
for d in common store election gateway/*/; do
    d=${d%/}; [ -n "${placed[$d]:-}" ] || { echo "check-deps: $d is not on the map"; fail=1; }
done
[ -z "$(ls gateway/*.[ch] 2>/dev/null)" ] || { echo "check-deps: sources directly in gateway/ (put them in a room)"; fail=1; }
while read -r lib paths; do
    [ -n "$lib" ] || continue
    while IFS=: read -r file _; do
        ok=0; for p in $paths; do case $file in "$p"*) ok=1 ;; esac; done
        [ $ok = 1 ] || { echo "check-deps: $file includes $lib (only: $paths)"; fail=1; }
    done < <(grep -rHnE "#include $(lib_rx "$lib")" common store election gateway || true)
done <<<"$ONLY"
[ $fail = 0 ] && echo "check-deps: ok"
exit $fail
