#!/usr/bin/env bash
# The Debian package, as an administrator meets it (run by .ci/run, as root):
# build it, dpkg -i, run the installed binary on the installed configuration,
# verify the installed unit with systemd-analyze, then purge and check that
# nothing of it is left but what purge keeps on purpose (the data dir).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "deb_check: needs root (dpkg -i)"; exit 1; }
if dpkg-query -W -f='${Status}' fencegate 2>/dev/null | grep -q 'install ok'; then
    echo "deb_check: a fencegate package is installed already; not touching it"; exit 1
fi
pass=0 fail=0
check() { # name, command...
    local name=$1; shift
    if "$@"; then echo "ok   $name"; pass=$((pass + 1)); else echo "FAIL $name"; fail=$((fail + 1)); fi
}
# make install into a DESTDIR, under another PREFIX: the unit names that binary
stage=$(mktemp -d)
make --no-print-directory install DESTDIR="$stage" PREFIX=/opt/fencegate >/dev/null
check "make install: binary" test -x "$stage/opt/fencegate/bin/fencegate"
check "make install: unit names PREFIX's binary" grep -q '^ExecStart=/opt/fencegate/bin/fencegate serve' \
    "$stage/opt/fencegate/lib/systemd/system/fencegate.service"
check "make install: example config" test -s "$stage/etc/fencegate/config.json"
check "make install: docs" test -s "$stage/opt/fencegate/share/doc/fencegate/README.md"
rm -rf "$stage"
deb=$(make --no-print-directory deb | tail -n 1)
trap 'dpkg --purge fencegate >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb"
check "installed binary runs" sh -c '/usr/bin/fencegate version | grep -q "^fencegate "'
check "conffile registered" sh -c 'dpkg-query -W -f="\${Conffiles}" fencegate | grep -q /etc/fencegate/config.json'
check "installed example passes check-config" env AWS_ACCESS_KEY_ID=AKIAEXAMPLE AWS_SECRET_ACCESS_KEY=example \
    AWS_SESSION_TOKEN=z FENCEGATE_ORDERS_WORKER_SECRET=x FENCEGATE_OPERATOR_SECRET=y \
    /usr/bin/fencegate check-config -c /etc/fencegate/config.json
check "unit names the installed binary" grep -q '^ExecStart=/usr/bin/fencegate serve -c /etc/fencegate/config.json$' \
    /lib/systemd/system/fencegate.service
check "systemd-analyze verify" systemd-analyze verify /lib/systemd/system/fencegate.service
check "service neither enabled nor started" sh -c '! systemctl is-enabled fencegate.service >/dev/null 2>&1'
dpkg --purge fencegate
check "purged: binary gone" test ! -e /usr/bin/fencegate
check "purged: unit gone" test ! -e /lib/systemd/system/fencegate.service
check "purged: conffile gone" test ! -e /etc/fencegate/config.json
echo "deb_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
