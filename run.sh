#!/bin/sh
# One entry point for a fresh Debian 12 machine (as root, or with sudo):
#   ./run.sh demo    set everything up, then classify an image cold and warm
#   ./run.sh test    set everything up, then run the whole test suite
#   ./run.sh setup   only set up (Debian packages, .venv, native parts, C library)
# Every step is skipped when already done, so repeated runs start at once.
set -eu
cd "$(dirname "$0")"

APT_PACKAGES="make gcc g++ binutils vulkan-validationlayers python3 python3-venv python3-dev libvulkan1 mesa-vulkan-drivers vulkan-tools libvulkan-dev libshaderc-dev glslang-dev glslang-tools spirv-tools postgresql cmake pkg-config libsqlite3-dev"

install_debian_packages() {
    missing=""
    for p in $APT_PACKAGES; do
        dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "run.sh: installing Debian packages:$missing"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
}

case "${1:-}" in
    setup|demo|test|test-slow|bench)
        install_debian_packages
        exec make "$1"
        ;;
    *)
        echo "usage: ./run.sh demo | test | test-slow | bench | setup" >&2
        exit 2
        ;;
esac
