"""The per-network error table on the GPU: every benchmark network and SqueezeNet v1.1 against
the PyPI ncnn on the CPU in fp32, once with fp32 options and once with ncnn's default GPU
options, as tests/test_networks_vulkan.py compares them (the same inputs, weights and bars).

    python tests/network_errors.py [--models NAME ...]

Prints a markdown table: the largest relative L2 error over each network's compared outputs
(detection networks at their heads), or the assertion that failed. Needs the test extras
(the PyPI ncnn is the oracle); exit code 1 when any network misses its bar.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_networks import BENCH, BENCH_MODELS, DETECTION_TYPES, ROOT, parse_param, weights  # noqa: E402
from test_networks_vulkan import TOL_DEFAULT, TOL_FP32, compare_gpu  # noqa: E402


def _cell(param: Path, bin_bytes: bytes, default: bool) -> tuple[str, bool]:
    try:
        errs = compare_gpu(param, bin_bytes, default)
    except AssertionError as e:
        return f"FAIL: {str(e).splitlines()[0]}", False
    # a detection output counts as matched (class, score, IoU >= 0.99), not as an error value
    detections = {name for name, typ in parse_param(param)[1] if typ in DETECTION_TYPES}
    values = [err for name, err in errs.items() if name not in detections]
    if not values:
        return "detections match", True
    return f"{max(values):.2e}" + (" + detections match" if detections & set(errs) else ""), True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=None, help="benchmark network names (default: all)")
    args = ap.parse_args(argv)
    import ncnn_c

    dev = ncnn_c.get_gpu_device(0)
    print(f"device: {dev.info.device_name}")
    names = args.models if args.models else BENCH_MODELS + ["squeezenet_v1.1"]
    print(f"| network | fp32 options (bar {TOL_FP32:g}) | default options (bar {TOL_DEFAULT:g}) | seconds |")
    print("| --- | ---: | ---: | ---: |")
    ok_all = True
    for name in names:
        if name == "squeezenet_v1.1":
            param = ROOT / "models" / "squeezenet_v1.1.param"
            bin_bytes = (ROOT / "models" / "squeezenet_v1.1.bin").read_bytes()
        else:
            param = BENCH / f"{name}.param"
            bin_bytes = weights(str(param), False)
        t = time.perf_counter()
        fp32, ok32 = _cell(param, bin_bytes, False)
        fp16, ok16 = _cell(param, bin_bytes, True)
        ok_all = ok_all and ok32 and ok16
        print(f"| {name} | {fp32} | {fp16} | {time.perf_counter() - t:.1f} |", flush=True)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
