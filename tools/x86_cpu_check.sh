#!/usr/bin/env bash
# Runs ncnn_c's CPU tests as they run on an older x86-64 CPU, on this one: the repository's venv
# Python under qemu-user's x86-64 emulator with a CPU model of qemu's (default Haswell: AVX2, FMA
# and F16C, no AVX-512, so no BF16, FP16 or VNNI). CPUID then reports that model, so the PyPI
# ncnn (the oracle), oneDNN, numpy and ncnn_c's own kernels all take their paths for it.
# See docs/portability.md ("x86-64 without AVX-512") for what it found.
#
#   tools/x86_cpu_check.sh [pytest arguments]     default: the layer, network, Mat and Python
#                                                  API tests of the main run, CPU side
#
# Environment: CPU_MODEL (Haswell; `qemu-x86_64 -cpu help` lists them), TEST_TIMEOUT (seconds,
# 5400). Needs `make setup` done (the venv) and qemu-user (installed with apt-get when
# missing, as root). Emulation runs 10-30 times slower: the default selection takes about
# 25 minutes on this repository's 2-core VM. Test helpers that start a Python child process
# (the isolated oracle) run that child natively: qemu-user does not follow exec.
set -euo pipefail

REPO=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
cd "$REPO"
MODEL=${CPU_MODEL:-Haswell}
if ! command -v qemu-x86_64 >/dev/null; then
    apt-get install -y -q qemu-user >/dev/null
fi
# test_int8_layers.py is left out: the PyPI ncnn's int8 convolution, the oracle there,
# crashes (SIGSEGV) under qemu 7.2 with the Haswell model, which would end the whole run
if [ "$#" -eq 0 ]; then
    set -- -q -p no:cacheprovider -m "not gpu and not slow and not capi" tests/layers \
        --ignore=tests/layers/test_int8_layers.py tests/test_networks.py tests/test_networks_int8.py \
        tests/test_mat.py tests/test_mat_ops.py tests/test_python_api.py tests/test_ncnn_compat.py
fi
# qemu 7.2 (Debian 12) computes numpy's AVX2 loop for np.maximum on a strided float32 array
# wrongly (all zeros; docs/portability.md), which ncnn_c's numpy layers use: numpy's AVX2 loops
# (its X86_V3 group) are switched off, every other library keeps the model's features. A model
# without AVX2 ignores the setting.
export NPY_DISABLE_CPU_FEATURES=${NPY_DISABLE_CPU_FEATURES-X86_V3}
# qemu warns once per process about CPUID bits it cannot emulate (pcid, x2apic, ...): dropped
timeout "${TEST_TIMEOUT:-5400}" qemu-x86_64 -cpu "$MODEL" .venv/bin/python -m pytest "$@" \
    2> >(grep -v "^qemu-x86_64: warning: TCG doesn't support requested feature" >&2)
