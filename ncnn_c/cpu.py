"""CPU queries and threading switches of ncnn's cpu.h, under the PyPI ``ncnn`` names.

The counts and ``cpu_support_*`` answers describe the machine we run on. The x86 features come
from the CPU itself (CPUID and XGETBV, through the ``_cpu`` extension), as ncnn's own dispatch
reads them, and the Arm ones from the kernel's hardware capability words (``getauxval``, also
through the extension); without the extension, from Linux's ``/proc/cpuinfo``. An x86 query
answers 0 on Arm and an Arm one 0 on x86, whatever ``/proc/cpuinfo`` lists (under qemu-user
it is the host's). Counts come from ``/sys/devices/system/cpu`` (with ``os.cpu_count()`` where
it is missing). As in ncnn, every core counts as "big" unless the cores' maximum frequencies
differ (then the slower ones are "little"), and the ``cpu_support_*`` functions return 1 or 0.

ncnn_c computes with numpy, not OpenMP, so the OpenMP/KMP switches only remember the value
set (``get_*`` returns it); ``set_cpu_powersave`` validates and remembers its mode (0 all
cores, 1 little cores, 2 big cores) without pinning threads.
"""

from __future__ import annotations

import functools
import logging
import os
import platform
from pathlib import Path

log = logging.getLogger("ncnn_c")

_SYS_CPU = Path("/sys/devices/system/cpu")


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    """The feature flags of the first CPU in /proc/cpuinfo (x86 ``flags``, Arm ``Features``)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return frozenset(value.split())
    return frozenset()


# bit i of the _cpu extension's ncnnc_x86_features(), named as /proc/cpuinfo names them
_X86_FEATURE_BITS = ("avx", "fma", "f16c", "avx2", "avx512", "avx512_vnni", "avx512_bf16", "avx512_fp16")
_AVX512_SET = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")


@functools.lru_cache(maxsize=1)
def _x86_features() -> frozenset[str]:
    """The x86 features the process may use: CPUID's answer where the extension is built
    (an emulator or a VM can list other flags in /proc/cpuinfo), else /proc/cpuinfo's."""
    from ._native.cpu import cpu_kernels

    if not _is_x86():
        return frozenset()
    kernels = cpu_kernels()
    bits = kernels.x86_features() if kernels is not None else -1
    if bits < 0:
        flags = _cpu_flags()
        return flags | ({"avx512"} if set(_AVX512_SET) <= flags else set())
    return frozenset(name for i, name in enumerate(_X86_FEATURE_BITS) if bits >> i & 1)


# bit i of the _cpu extension's ncnnc_arm_features()
_ARM_FEATURE_BITS = ("neon", "vfpv4", "asimdhp", "fphp", "asimddp")


@functools.lru_cache(maxsize=1)
def _arm_features() -> frozenset[str]:
    """The Arm features the process may use: the kernel's hwcaps where the extension is built,
    else /proc/cpuinfo's ``Features`` (aarch64 always has neon and vfpv4, as ncnn says)."""
    from ._native.cpu import cpu_kernels

    if not _is_arm():
        return frozenset()
    kernels = cpu_kernels()
    bits = kernels.arm_features() if kernels is not None else -1
    if bits >= 0:
        return frozenset(name for i, name in enumerate(_ARM_FEATURE_BITS) if bits >> i & 1)
    flags = set(_cpu_flags())
    if "asimd" in flags or platform.machine().lower() in ("aarch64", "arm64"):
        flags |= {"neon", "vfpv4"}
    return frozenset(flags)


def _cpu_dirs() -> list[Path]:
    try:
        return sorted(p for p in _SYS_CPU.glob("cpu[0-9]*") if p.name[3:].isdigit())
    except OSError:
        return []


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


@functools.lru_cache(maxsize=1)
def _max_freqs() -> list[int]:
    """Each CPU's maximum frequency (kHz), or [] when cpufreq is not exposed for all of them."""
    freqs = [_read_int(d / "cpufreq" / "cpuinfo_max_freq") for d in _cpu_dirs()]
    if not freqs or any(f is None for f in freqs):
        return []
    return [f for f in freqs if f is not None]


def get_cpu_count() -> int:
    """Logical CPUs of the machine."""
    return max(1, os.cpu_count() or 1)


def get_little_cpu_count() -> int:
    freqs = _max_freqs()
    if not freqs or min(freqs) == max(freqs):
        return 0
    return sum(1 for f in freqs if f < max(freqs))


def get_big_cpu_count() -> int:
    return max(1, get_cpu_count() - get_little_cpu_count())


@functools.lru_cache(maxsize=1)
def _physical_cores() -> list[tuple[int, int, int]]:
    """(package, core id, max freq) per physical core, from the sysfs topology ([] if absent)."""
    cores: dict[tuple[int, int], int] = {}
    for d in _cpu_dirs():
        core = _read_int(d / "topology" / "core_id")
        package = _read_int(d / "topology" / "physical_package_id")
        if core is None or package is None:
            return []
        freq = _read_int(d / "cpufreq" / "cpuinfo_max_freq") or 0
        cores[(package, core)] = max(freq, cores.get((package, core), 0))
    return [(p, c, f) for (p, c), f in cores.items()]


def get_physical_cpu_count() -> int:
    """Physical cores (hyper-threads of one core count once)."""
    cores = _physical_cores()
    return len(cores) if cores else get_cpu_count()


def get_physical_little_cpu_count() -> int:
    cores = _physical_cores()
    freqs = [f for _, _, f in cores]
    if not freqs or min(freqs) == max(freqs):
        return 0
    return sum(1 for f in freqs if f < max(freqs))


def get_physical_big_cpu_count() -> int:
    return max(1, get_physical_cpu_count() - get_physical_little_cpu_count())


def _is_arm() -> bool:
    return platform.machine().lower() in ("aarch64", "arm64") or platform.machine().lower().startswith("arm")


def _is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def cpu_support_x86_avx() -> int:
    return int("avx" in _x86_features())


def cpu_support_x86_avx2() -> int:
    return int("avx2" in _x86_features())


def cpu_support_x86_fma() -> int:
    return int("fma" in _x86_features())


def cpu_support_x86_f16c() -> int:
    return int("f16c" in _x86_features())


def cpu_support_x86_avx512() -> int:
    return int("avx512" in _x86_features())


def cpu_support_arm_neon() -> int:
    return int("neon" in _arm_features())


def cpu_support_arm_vfpv4() -> int:
    return int("vfpv4" in _arm_features())


def cpu_support_arm_asimdhp() -> int:
    return int("asimdhp" in _arm_features())


# ---------------------------------------------------------------- switches

_state = {"powersave": 0, "omp_num_threads": 1, "omp_dynamic": 0, "kmp_blocktime": 0}


def get_cpu_powersave() -> int:
    return _state["powersave"]


def set_cpu_powersave(powersave: int) -> int:
    """0 = all cores, 1 = little cores only, 2 = big cores only; -1 (and a log line) otherwise."""
    powersave = int(powersave)
    if powersave not in (0, 1, 2):
        log.error("set_cpu_powersave: powersave %d not supported (0, 1 or 2)", powersave)
        return -1
    _state["powersave"] = powersave
    return 0


def get_omp_num_threads() -> int:
    return _state["omp_num_threads"]


def set_omp_num_threads(num_threads: int) -> None:
    _state["omp_num_threads"] = max(1, int(num_threads))


def get_omp_dynamic() -> int:
    return _state["omp_dynamic"]


def set_omp_dynamic(dynamic: int) -> None:
    _state["omp_dynamic"] = int(dynamic)


def get_omp_thread_num() -> int:
    """The calling thread's index inside an OpenMP team: always 0 (no OpenMP teams here)."""
    return 0


def get_kmp_blocktime() -> int:
    return _state["kmp_blocktime"]


def set_kmp_blocktime(time_ms: int) -> None:
    _state["kmp_blocktime"] = int(time_ms)
