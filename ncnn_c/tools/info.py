"""``python -m ncnn_c info``: what this installation can use.

    python -m ncnn_c info [--json]

Prints the version, the native extensions (built or missing), the CPU, every Vulkan device
(name, type, API and driver, the features the shaders use, memory) and where caches go
(``ncnn_c.cachestore.default_cache_dir()``). ``--json`` prints one JSON object instead, for
scripts.

Exit codes: 0 done (also when there is no Vulkan device: that is information, not an error),
1 the report could not be made, 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

_DEVICE_TYPES = {0: "discrete", 1: "integrated", 2: "virtual", 3: "cpu"}
_FEATURES = (
    "support_fp16_storage",
    "support_fp16_arithmetic",
    "support_fp16_uniform",
    "support_int8_storage",
    "support_int8_arithmetic",
    "support_int64",
    "support_fp64",
    "support_subgroup_ops",
    "support_VK_KHR_push_descriptor",
    "support_VK_EXT_memory_budget",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _native() -> dict[str, str | None]:
    """Each native extension: its file, or None when it is not built."""
    out: dict[str, str | None] = {}
    for name in ("_shaderc", "_hash", "_cpu"):
        try:
            out[name] = importlib.import_module(f"ncnn_c._native.{name}").__file__
        except ImportError:
            out[name] = None
    from ncnn_c._native import onednn

    plan = onednn.get()  # it needs oneDNN loaded first
    out["_plan"] = plan.__file__ if plan is not None else None
    return out


def _cpu_plan() -> str:
    """The native CPU plan's state: on, or why it is off (the numpy layers run then)."""
    from ncnn_c._native import onednn

    return onednn.reason() or "on (oneDNN)"


def _version_str(v: int) -> str:
    return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


def _devices() -> list[dict[str, Any]]:
    import ncnn_c

    devices = []
    for i in range(ncnn_c.get_gpu_count()):
        g = ncnn_c.get_gpu_info(i)
        if g is None:
            continue
        devices.append(
            {
                "index": i,
                "name": str(g.device_name),
                "type": _DEVICE_TYPES.get(int(g.type), "unknown"),
                "vendor_id": f"0x{int(g.vendor_id):04x}",
                "device_id": f"0x{int(g.device_id):x}",
                "api_version": _version_str(int(g.api_version)),
                "driver": str(g.driver_name),
                "driver_info": str(g.driver_info),
                "driver_version": f"0x{int(g.driver_version):08x}",
                "pipeline_cache_uuid": bytes(g.pipeline_cache_uuid).hex(),
                "compute_queue_family": int(g.compute_queue_family_index),
                "compute_queues": int(g.compute_queue_count),
                "subgroup_size": int(g.subgroup_size),
                "device_local_memory_mib": int(g.device_local_heap_size) >> 20,
                "unified_memory": bool(g.unified_memory),
                "features": {k[len("support_") :]: bool(getattr(g, k, False)) for k in _FEATURES},
            }
        )
    return devices


def collect() -> dict[str, Any]:
    import ncnn_c
    from ncnn_c import cpu
    from ncnn_c.cachestore import CACHE_DIR_ENV, default_cache_dir

    return {
        "version": ncnn_c.__version__,
        "python": sys.version.split()[0],
        "package": os.path.dirname(os.path.abspath(ncnn_c.__file__)),
        "native": _native(),
        "cpu_plan": _cpu_plan(),
        "cpu": {
            "count": cpu.get_cpu_count(),
            "physical": cpu.get_physical_cpu_count(),
            "avx": bool(cpu.cpu_support_x86_avx()),
            "avx2": bool(cpu.cpu_support_x86_avx2()),
        },
        "vulkan_devices": _devices(),
        "default_gpu": ncnn_c.get_default_gpu_index(),
        "cache_dir": default_cache_dir(),
        "cache_dir_env": CACHE_DIR_ENV,
    }


def _print_text(r: dict[str, Any]) -> None:
    print(f"ncnn_c {r['version']} (Python {r['python']}) at {r['package']}")
    for name, path in r["native"].items():
        print(f"  native {name}: {path or 'not built (slower fallback / built on first use)'}")
    print(f"  native CPU plan: {r['cpu_plan']}")
    c = r["cpu"]
    print(f"CPU: {c['count']} logical, {c['physical']} physical, avx={c['avx']}, avx2={c['avx2']}")
    devs = r["vulkan_devices"]
    if not devs:
        print("Vulkan: no device (the GPU path is unavailable; install a driver, e.g. mesa-vulkan-drivers)")
    for d in devs:
        mark = " (default)" if d["index"] == r["default_gpu"] else ""
        print(
            f"GPU {d['index']}{mark}: {d['name']} [{d['type']}] vendor {d['vendor_id']} device {d['device_id']}"
        )
        print(f"  Vulkan {d['api_version']}, driver {d['driver']} {d['driver_info']} ({d['driver_version']})")
        print(f"  pipelineCacheUUID {d['pipeline_cache_uuid']}")
        print(
            f"  compute queue family {d['compute_queue_family']} x{d['compute_queues']}, subgroup {d['subgroup_size']}, "
            f"device-local {d['device_local_memory_mib']} MiB, unified memory {d['unified_memory']}"
        )
        on = [k for k, v in d["features"].items() if v]
        off = [k for k, v in d["features"].items() if not v]
        print(f"  features: {' '.join(on) or '-'}")
        if off:
            print(f"  without: {' '.join(off)}")
    print(f"cache directory: {r['cache_dir']} (set ${r['cache_dir_env']} to move it)")


def run(args: argparse.Namespace) -> int:
    try:
        report = collect()
    except Exception as e:  # a broken installation: say what, and let scripts see a failure
        print(f"ncnn_c info: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_text(report)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ncnn_c info", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))
