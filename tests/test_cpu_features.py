"""cpu_support_* answer for the architecture we run on, not for what /proc/cpuinfo lists: under
qemu-user (how tools/aarch64_check.sh runs the aarch64 build) /proc/cpuinfo is the host's."""

from __future__ import annotations

import platform

import pytest

import ncnn_c._native.cpu as native_cpu
from ncnn_c import cpu

X86_FLAGS = frozenset({"fpu", "sse2", "avx", "fma", "f16c", "avx2"})
ARM_FLAGS = frozenset({"fp", "asimd", "evtstrm", "asimdhp", "fphp"})


@pytest.fixture
def machine(monkeypatch):
    """Pretend to run on another machine: returns a setter of (uname machine, cpuinfo flags,
    whether the _cpu extension is there); the feature caches are cleared around each use."""

    def clear():
        cpu._x86_features.cache_clear()
        cpu._arm_features.cache_clear()

    def set_machine(name: str, flags: frozenset[str], extension: bool) -> None:
        monkeypatch.setattr(platform, "machine", lambda: name)
        monkeypatch.setattr(cpu, "_cpu_flags", lambda: flags)
        if not extension:
            monkeypatch.setattr(native_cpu, "cpu_kernels", lambda: None)
        clear()

    yield set_machine
    monkeypatch.undo()
    clear()


def answers() -> dict[str, int]:
    names = ("x86_avx", "x86_avx2", "x86_fma", "arm_neon", "arm_vfpv4", "arm_asimdhp")
    return {n: getattr(cpu, "cpu_support_" + n)() for n in names}


def test_aarch64_under_an_x86_cpuinfo(machine):
    machine("aarch64", X86_FLAGS, extension=False)
    assert answers() == {
        "x86_avx": 0, "x86_avx2": 0, "x86_fma": 0, "arm_neon": 1, "arm_vfpv4": 1, "arm_asimdhp": 0,
    }  # fmt: skip


def test_aarch64_cpuinfo_features(machine):
    machine("aarch64", ARM_FLAGS, extension=False)
    assert answers()["arm_asimdhp"] == 1 and answers()["x86_avx"] == 0


def test_x86_ignores_arm_flags(machine):
    machine("x86_64", ARM_FLAGS | {"avx"}, extension=False)
    assert answers() == {
        "x86_avx": 1, "x86_avx2": 0, "x86_fma": 0, "arm_neon": 0, "arm_vfpv4": 0, "arm_asimdhp": 0,
    }  # fmt: skip


def test_extension_answers_for_its_own_architecture():
    kernels = native_cpu.cpu_kernels()
    if kernels is None:
        pytest.fail("the _cpu extension is not built (python -m ncnn_c._native.build_cpu)")
    arch = platform.machine().lower()
    if arch in ("x86_64", "amd64"):
        assert kernels.arm_features() == -1 and kernels.x86_features() >= 0
    elif arch in ("aarch64", "arm64"):
        # aarch64 always has Advanced SIMD and what ncnn calls vfpv4 (bits 0 and 1)
        assert kernels.x86_features() == -1 and kernels.arm_features() & 3 == 3
        assert cpu.cpu_support_arm_neon() == 1 and cpu.cpu_support_x86_avx() == 0
    else:
        assert kernels.x86_features() == -1
