#!/usr/bin/env bash
# Installs every Debian 12 package that fencegate's build, tests, fuzzing and
# lint need.  Idempotent; run as root (make deps).
set -euo pipefail
PKGS=(
    build-essential pkg-config git ca-certificates procps curl
    libevent-dev libcurl4-openssl-dev libssl-dev libjansson-dev liblmdb-dev
    libexpat1-dev node-llhttp libcmocka-dev lmdb-utils
    clang libclang-rt-14-dev clang-format clang-tidy cppcheck
    python3 python3-pytest python3-pytest-xdist python3-boto3 python3-requests awscli s3cmd rclone
    radosgw ceph-mon ceph-osd
    nginx-light wrk linux-perf
    python3-venv python3-setuptools python3-wheel python3-pip prometheus chromium
    golang-go golang-github-aws-aws-sdk-go-v2-dev golang-github-aws-smithy-go-dev
)
missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
# The JS client tests need node and npm: Debian's nodejs and npm, unless the
# image already has them (a nodesource nodejs bundles npm and conflicts with
# Debian's npm package).
if ! command -v node >/dev/null 2>&1; then
    missing+=(nodejs)
fi
if ! command -v npm >/dev/null 2>&1; then
    missing+=(npm)
fi
if [ "${#missing[@]}" -eq 0 ]; then
    echo "deps: all ${#PKGS[@]} packages present"
    exit 0
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
# Debian's radosgw/ceph packages start nothing we need; the tests boot their own.
