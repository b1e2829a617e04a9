#!/usr/bin/env bash
# Builds ncnn_c on aarch64 and runs its CPU tests there, on an x86-64 Debian 12 host: a Debian 12
# arm64 root under $ARM64_ROOT, entered with chroot through qemu-user's static aarch64 emulator
# (registered with binfmt_misc, flag F, so it works inside the chroot). Nothing is written into
# the checkout: the working tree (tracked and untracked, not ignored files) is copied to
# $ARM64_ROOT/src/ncnn_c and built and tested there. See docs/portability.md for what it found.
#
#   sudo tools/aarch64_check.sh [STEP...]    steps: root venv sync build probe test (the default),
#                                            and wheel (pip wheel ., installed into a fresh venv)
#
# Environment: ARM64_ROOT (/tmp/arm64root), QEMU_DIR (/tmp/qemu-static), ARM64_TREE (what the sync
# step copies: "worktree", the default, or a commit such as HEAD), TEST_ARGS (the pytest
# arguments of the test step), TEST_TIMEOUT (seconds, 3000). Needs root (debootstrap, chroot,
# mount, binfmt_misc), network access to deb.debian.org and PyPI, and about 1.5 GB of disk.
# Emulation runs Python 10-30 times slower than the host: the default test selection is the CPU
# side of the layer tests plus Mat and a subset of the network tests.
set -euo pipefail

REPO=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
ROOT=${ARM64_ROOT:-/tmp/arm64root}
QEMU_DIR=${QEMU_DIR:-/tmp/qemu-static}
QEMU=$QEMU_DIR/usr/bin/qemu-aarch64-static
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
# the arm64 root's Debian packages: a compiler (g++ for libstdc++, which the static shaderc
# needs), Python's headers, and the static shaderc libraries the in-process GLSL compiler links
# (as on x86-64, README "Building")
PACKAGES=python3,python3-venv,python3-dev,gcc,g++,libc6-dev,ca-certificates,libshaderc-dev,glslang-dev,spirv-tools
# the test dependencies as pyproject.toml pins them (ncnn is the oracle; it ships aarch64 wheels);
# oneDNN (onednn-cpu-gomp) has no aarch64 wheel, so it is not installed
PIP_PACKAGES=(numpy==2.4.6 cffi==2.1.1 pytest==9.2.0 pillow==13.0.0 vulkan==1.3.275.1 tqdm==4.70.1 ncnn==1.0.20261020)
VENV=/opt/venv
SRC=/src/ncnn_c
TREE=${ARM64_TREE:-worktree}
TEST_ARGS=${TEST_ARGS:-tests/layers tests/test_mat.py tests/test_networks.py -m "not gpu and not slow" -q -p no:cacheprovider}
TEST_TIMEOUT=${TEST_TIMEOUT:-3000}

say() { printf '\n== %s\n' "$*"; }

# chroot ROOT with /proc, /sys and /dev mounted for the duration of one command
in_root() {
    local m
    for m in proc sys dev; do
        mountpoint -q "$ROOT/$m" || mount --rbind "/$m" "$ROOT/$m"
    done
    cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
    # pip inside trusts what the host trusts (a network whose proxy re-signs TLS adds its CA there)
    cp -L "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$ROOT/etc/ssl/host-ca-certificates.crt"
    chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive SSL_CERT_FILE=/etc/ssl/host-ca-certificates.crt \
        PIP_CERT=/etc/ssl/host-ca-certificates.crt "$@"
}

unmount_all() {
    local m
    for m in dev sys proc; do
        mountpoint -q "$ROOT/$m" && umount -R "$ROOT/$m" || true
    done
}
trap unmount_all EXIT

emulator() {
    if [ ! -x "$QEMU" ]; then
        say "qemu-user-static (extracted into $QEMU_DIR, not installed)"
        mkdir -p "$QEMU_DIR"
        (cd "$QEMU_DIR" && apt-get download qemu-user-static && dpkg-deb -x qemu-user-static_*.deb .)
    fi
    local b=/proc/sys/fs/binfmt_misc
    [ -e $b/register ] || mount -t binfmt_misc binfmt_misc $b
    if [ ! -e $b/ncnnc-aarch64 ]; then
        # the ELF header of an aarch64 executable, as Debian's qemu-user-binfmt matches it
        printf '%s' ':ncnnc-aarch64:M::\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$QEMU"':F' >$b/register
    fi
}

step_root() {
    emulator
    if [ ! -x "$ROOT/usr/bin/python3" ]; then
        say "debootstrap $SUITE arm64 into $ROOT"
        command -v debootstrap >/dev/null || apt-get install -y debootstrap
        debootstrap --arch=arm64 --variant=minbase --foreign --include=$PACKAGES $SUITE "$ROOT" $MIRROR
        in_root /debootstrap/debootstrap --second-stage
    fi
    # a root made with an older package list gets what is missing
    in_root sh -c "dpkg -s ${PACKAGES//,/ } >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq ${PACKAGES//,/ })"
    in_root uname -m
}

step_venv() {
    emulator
    say "venv $VENV in the arm64 root"
    [ -x "$ROOT$VENV/bin/python" ] || in_root python3 -m venv $VENV
    in_root $VENV/bin/python -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"
    in_root $VENV/bin/python -c "import platform, numpy, ncnn; print(platform.machine(), 'numpy', numpy.__version__, 'ncnn', ncnn.__version__)"
}

step_sync() {
    say "copy the $TREE to $ROOT$SRC (built extensions kept)"
    mkdir -p "$ROOT$SRC"
    find "$ROOT$SRC" -mindepth 1 ! -type d ! -path '*/ncnn_c/_native/_*.so' -delete
    if [ "$TREE" = worktree ]; then
        git -C "$REPO" ls-files -z -co --exclude-standard | tar -C "$REPO" --null -T - -cf - | tar -C "$ROOT$SRC" -xf -
    else
        git -C "$REPO" archive --format=tar "$TREE" | tar -C "$ROOT$SRC" -xf -
    fi
}

step_build() {
    emulator
    say "native extensions (python -m ncnn_c._native.build_<x>, as make native)"
    local x
    for x in hash cpu shaderc int8 llm winograd plan; do
        if in_root sh -c "cd $SRC && $VENV/bin/python -m ncnn_c._native.build_$x"; then
            echo "build_$x: built"
        else
            echo "build_$x: NOT built"
        fi
    done
    ls -l "$ROOT$SRC"/ncnn_c/_native/*aarch64*.so
    # oneDNN has no aarch64 wheel, so _plan and _winograd cannot be built against an installed
    # oneDNN: compile them against the x86-64 wheel's headers (architecture-neutral, 3.2) into a
    # scratch directory, to show the C is portable; nothing is installed
    say "compile check of the oneDNN extensions against oneDNN 3.2's headers (not installed)"
    in_root sh -c "[ -d /opt/dnnl/include ] || ($VENV/bin/pip download -q --no-deps --only-binary=:all: \
        --platform manylinux1_x86_64 --python-version 3.11 -d /opt/dnnl/wheel onednn-devel-cpu-gomp==2023.2.0 \
        && cd /opt/dnnl && $VENV/bin/python -m zipfile -e wheel/*.whl unpacked \
        && mv unpacked/*.data/data/include /opt/dnnl/include)"
    in_root sh -c "cd $SRC && NCNN_C_DNNL_INCLUDE=/opt/dnnl/include $VENV/bin/python -" <<'PY'
import importlib, tempfile
for name in ("plan", "winograd"):
    builder = importlib.import_module(f"ncnn_c._native.build_{name}")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            builder._ffibuilder().compile(tmpdir=tmp)
            print(f"build_{name}: compiles for aarch64 (not installed: no libdnnl.so.3 to load)")
        except Exception as e:  # the compiler's message says what is not portable
            print(f"build_{name}: does NOT compile: {e}")
PY
}

step_probe() {
    emulator
    say "what the package finds at run time"
    in_root sh -c "cd $SRC && $VENV/bin/python -" <<'PY'
import logging, platform
logging.basicConfig(level=logging.INFO, format="log: %(message)s")
import numpy as np
import ncnn_c
from ncnn_c import cpu
from ncnn_c._native import onednn
from ncnn_c._native.cpu import cpu_kernels
print("machine", platform.machine())
print("_cpu kernels", cpu_kernels() is not None)
for f in ("x86_avx", "x86_avx2", "x86_fma", "arm_neon", "arm_vfpv4", "arm_asimdhp"):
    print(f"cpu_support_{f}", getattr(cpu, "cpu_support_" + f)())
print("oneDNN", onednn.get() is not None, onednn.reason())
from ncnn_c._native import compile_glsl
ok, spirv = compile_glsl(b"#version 450\nlayout(local_size_x = 64) in;\nvoid main() {}\n", "probe.comp")
print("GLSL -> SPIR-V (_shaderc)", ok, len(spirv), "bytes")
net = ncnn_c.Net()
net.load_param("models/squeezenet_v1.1.param")
net.load_model("models/squeezenet_v1.1.bin")
ex = net.create_extractor()
ex.input("data", ncnn_c.Mat(np.random.default_rng(0).random((3, 227, 227), dtype=np.float32)))
ret, out = ex.extract("prob")
print("squeezenet extract", ret, np.array(out).shape)
PY
}

# the wheel as `make wheel` builds it before auditwheel (pip's isolated build: setuptools and
# cffi from PyPI, no oneDNN headers on aarch64), then installed into a fresh venv that imports
# the extensions it carries
step_wheel() {
    emulator
    say "pip wheel . (into /tmp/wheel of the root) and a fresh venv that installs it"
    in_root sh -c "rm -rf /tmp/wheel /tmp/wheelvenv && cd $SRC && $VENV/bin/python -m pip wheel -q . --no-deps -w /tmp/wheel"
    ls -l "$ROOT"/tmp/wheel/*.whl
    # _int8 and _llm are in the wheel but load only after oneDNN (its libgomp): not imported here
    in_root sh -c "python3 -m venv /tmp/wheelvenv && /tmp/wheelvenv/bin/pip install -q /tmp/wheel/*.whl"
    in_root sh -c "cd / && /tmp/wheelvenv/bin/python -" <<'PY'
import importlib
for m in ("_cpu", "_hash", "_shaderc"):
    print("wheel:", importlib.import_module("ncnn_c._native." + m).__file__)
import numpy as np
import ncnn_c
net = ncnn_c.Net()
net.load_param("/src/ncnn_c/models/squeezenet_v1.1.param")
net.load_model("/src/ncnn_c/models/squeezenet_v1.1.bin")
ex = net.create_extractor()
ex.input("data", ncnn_c.Mat(np.ones((3, 227, 227), np.float32)))
print("wheel: squeezenet extract", ex.extract("prob")[0])
PY
}

step_test() {
    emulator
    say "pytest $TEST_ARGS (timeout $TEST_TIMEOUT s)"
    local t0=$SECONDS rc=0
    in_root sh -c "cd $SRC && timeout $TEST_TIMEOUT $VENV/bin/python -m pytest $TEST_ARGS" || rc=$?
    echo "pytest exit $rc after $((SECONDS - t0)) s"
    return $rc
}

[ "$(id -u)" = 0 ] || { echo "aarch64_check.sh: needs root (chroot, mount, binfmt_misc)" >&2; exit 2; }
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(root venv sync build probe test)
for s in "${steps[@]}"; do
    case $s in
        root | venv | sync | build | probe | test | wheel) "step_$s" ;;
        *) echo "aarch64_check.sh: unknown step $s (root venv sync build probe test wheel)" >&2; exit 2 ;;
    esac
done
