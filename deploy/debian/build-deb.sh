#!/usr/bin/env bash
# make deb: a Debian package of the built gateway, with Debian's own tools
# (dpkg-shlibdeps for the dependencies, dpkg-deb to build).
#   deploy/debian/build-deb.sh BIN OUTDIR
# Installs into a staging tree with `make install` (PREFIX=/usr), adds
# /etc/fencegate/config.json (a conffile: the example), the copyright file and
# the changelog, and writes OUTDIR/fencegate_VERSION_ARCH.deb.
set -euo pipefail
bin=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# "fencegate 0.1.0-dev" -> 0.1.0~dev (sorts before 0.1.0, as Debian wants)
version=$("$bin" version | awk '{print $2}' | sed 's/-/~/g')
arch=$(dpkg --print-architecture)
stage=$out/stage
rm -rf "$stage"
mkdir -p "$stage/DEBIAN"
make -C "$repo" --no-print-directory install-files DESTDIR="$stage" PREFIX=/usr \
    UNITDIR=/lib/systemd/system SYSCONFDIR=/etc
strip --strip-unneeded "$stage/usr/bin/fencegate"
doc=$stage/usr/share/doc/fencegate
install -m 0644 "$here/copyright" "$doc/copyright"
sed -e "s/@VERSION@/$version/" -e "s/@DATE@/$(date -R)/" "$here/changelog" |
    gzip -9n > "$doc/changelog.Debian.gz"
install -d -m 0755 "$stage/etc/fencegate"
install -m 0644 "$repo/deploy/example.json" "$stage/etc/fencegate/config.json"
echo /etc/fencegate/config.json > "$stage/DEBIAN/conffiles"
# dpkg-shlibdeps reads debian/control of a source package: give it a minimal one.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debian"
printf 'Source: fencegate\n\nPackage: fencegate\nArchitecture: any\n' > "$tmp/debian/control"
depends=$(cd "$tmp" && dpkg-shlibdeps -O -e"$stage/usr/bin/fencegate" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$depends/" \
    "$here/control.in" > "$stage/DEBIAN/control"
install -m 0755 "$here/postinst" "$here/prerm" "$here/postrm" "$stage/DEBIAN/"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
echo "Installed-Size: $size" >> "$stage/DEBIAN/control"
deb=$out/fencegate_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
