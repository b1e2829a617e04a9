"""Per-layer Python overhead of the CPU executor, against the PyPI ncnn on the same network.

A chain of N tiny layers (ReLU, Dropout with a scale, ReLU with a slope ...) on a 4-element
blob does almost no arithmetic, so extract time / N is what running one layer costs beyond
its maths: scheduling, option lookup, blob bookkeeping, the call itself.

    python benchmarks/layer_overhead.py [--layers 200] [--loops 200] [--light 0|1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# ReLU and Dropout exist in every build of ncnn_c; the pattern mixes in-place layers with
# and without arithmetic
_PATTERN = ("ReLU {n} 1 1 {a} {b}", "Dropout {n} 1 1 {a} {b} 0=0.5", "ReLU {n} 1 1 {a} {b} 0=0.1")


def chain_param(layers: int) -> str:
    """A .param text: Input (w=4) followed by ``layers`` tiny layers in a chain."""
    lines = ["7767517", f"{layers + 1} {layers + 1}", "Input in 0 1 b0 0=4"]
    for i in range(layers):
        lines.append(_PATTERN[i % len(_PATTERN)].format(n=f"l{i}", a=f"b{i}", b=f"b{i + 1}"))
    return "\n".join(lines) + "\n"


def _timeit(run, loops: int) -> list[float]:
    for _ in range(max(2, loops // 10)):
        run()
    times = []
    for _ in range(loops):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return times


def bench_ours(
    text: str, x: np.ndarray, loops: int, light: bool, custom: dict | None = None
) -> tuple[list[float], np.ndarray]:
    import ncnn_c
    from ncnn_c.datareader import DataReaderFromEmpty

    net = ncnn_c.Net()
    for name, cls in (custom or {}).items():
        net.register_custom_layer(name, cls)
    net.opt.lightmode = light
    net.opt.num_threads = 1
    assert net.load_param_mem(text) == 0 and net.load_model(DataReaderFromEmpty()) == 0
    out_name = net.output_names()[0]
    mat = ncnn_c.Mat(x)
    result: list = []

    def run():
        ex = net.create_extractor()
        ex.input("b0", mat)
        ret, out = ex.extract(out_name)
        assert ret == 0
        result[:] = [out]

    times = _timeit(run, loops)
    return times, np.array(result[0], copy=True)


def bench_ncnn(text: str, x: np.ndarray, loops: int, light: bool) -> tuple[list[float], np.ndarray]:
    import ncnn

    net = ncnn.Net()
    net.opt.lightmode = light
    net.opt.num_threads = 1
    net.opt.use_vulkan_compute = False
    net.opt.use_packing_layout = False
    net.opt.use_fp16_storage = net.opt.use_fp16_packed = net.opt.use_fp16_arithmetic = False
    assert net.load_param_mem(text) == 0
    assert net.load_model(ncnn.DataReaderFromEmpty()) == 0
    out_name = net.output_names()[0]
    # a Mat over numpy memory has no refcount: ncnn's in-place layers would then write
    # into (and crash on) the caller's array, so hand it an owned copy as the oracle does
    mat = ncnn.Mat(x).clone()
    result: list = []

    def run():
        ex = net.create_extractor()
        ex.input("b0", mat)
        ret, out = ex.extract(out_name)
        assert ret == 0
        result[:] = [out]

    times = _timeit(run, loops)
    return times, np.array(result[0], copy=True)


def _nothing_layer():
    """An in-place layer that does no work: what remains is the executor's own cost."""
    import ncnn_c

    class Nothing(ncnn_c.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.one_blob_only = True
            self.support_inplace = True

        def forward_inplace(self, bottom_top, opt) -> int:
            return 0

        def forward(self, bottom, top, opt) -> int:
            top.share_from(bottom)
            return 0

    return Nothing


def nothing_param(layers: int) -> str:
    """The chain of ``chain_param`` with every layer replaced by ``Nothing``."""
    lines = chain_param(layers).splitlines()
    body = ["Nothing " + " ".join(line.split()[1:6]) for line in lines[3:]]
    return "\n".join(lines[:3] + body) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=200)
    ap.add_argument("--loops", type=int, default=200)
    ap.add_argument("--light", type=int, choices=(0, 1), default=1, help="light mode (default 1)")
    args = ap.parse_args(argv)
    text = chain_param(args.layers)
    x = np.array([-2.0, -0.5, 0.5, 2.0], dtype=np.float32)
    rows = [("ncnn_c", *bench_ours(text, x, args.loops, bool(args.light)))]
    custom = {"Nothing": _nothing_layer()}
    executor = bench_ours(nothing_param(args.layers), x, args.loops, bool(args.light), custom)[0]
    try:
        rows.append(("ncnn (PyPI)", *bench_ncnn(text, x, args.loops, bool(args.light))))
    except ImportError:
        print("PyPI ncnn not installed: only ncnn_c is measured", file=sys.stderr)
    print(f"{args.layers} layers on a 4-element blob, lightmode={args.light}, {args.loops} loops")
    print(f"{'library':<12} {'us/layer (median)':>18} {'us/layer (min)':>15} {'extract ms':>11}")
    for name, times, _ in rows + [("(executor)", executor, None)]:
        med, low = statistics.median(times), min(times)
        print(
            f"{name:<12} {med / args.layers * 1e6:>18.2f} {low / args.layers * 1e6:>15.2f} {med * 1e3:>11.3f}"
        )
    print("(executor): ncnn_c with layers that do nothing: the scheduling cost alone")
    if len(rows) == 2 and not np.allclose(rows[0][2], rows[1][2], rtol=1e-6, atol=1e-6):
        print(f"outputs differ: ncnn_c {rows[0][2]} vs ncnn {rows[1][2]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
