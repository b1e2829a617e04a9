"""What the native plan's NaN rule costs (docs/design.md, "NaN and inf"): each step of a
network's plan, as shipped (ReLU a pass of ``_native/nonfinite.c`` or oneDNN's elu, max pooling
nonfinite.c's kernel, Softmax with its non-finite lines fixed) against the same plan with
oneDNN's own forms (relu max(x, 0), its max pooling), which drop a NaN. Both plans are timed
step by step (``ncnnc_plan_run_timed``), run in turn so that the machine's load hits both
alike; each step's least time over the runs is kept.

    python benchmarks/nan_rule_cost.py [MODEL.param] [--threads 1] [--runs 60]

MODEL defaults to SqueezeNet (models/squeezenet_v1.1.param); zero weights, as the benchmarks
(``threads_fit``'s plans: the times do not depend on the values). Prints the steps that differ
by more than 10 us, the totals, the machine and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ncnn_c.net.native.ops import conv, eltwise, reduce  # noqa: E402
from ncnn_c.net.native.threads import min_work  # noqa: E402
from ncnn_c.net.native.threads_fit import _per_layer, _planned  # noqa: E402

SHIPPED = {"relu": eltwise.relu_op, "pool": reduce.max_pool}


def _onednn_relu(slope: float):
    return ("relu", slope, 0.0)


def _onednn_pool(plan, layer, seg, src, odims, kernel, stride, pads):
    dn = plan.dnnl
    (t, l), (_, _, h, w) = pads, src.md.dims
    b = (odims[2] - 1) * stride[0] + kernel[0] - h - t
    r = (odims[3] - 1) * stride[1] + kernel[1] - w - l
    pd = dn.pooling("max", src.md, dn.md(odims, "any"), stride, kernel, (t, l), (b, r))
    plan.run1(seg, pd, src, plan.top(layer, pd.md("dst", odims)))


def _use(shipped: bool) -> None:
    eltwise.relu_op = conv.relu_op = SHIPPED["relu"] if shipped else _onednn_relu
    reduce.max_pool = SHIPPED["pool"] if shipped else _onednn_pool


def _load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("param", nargs="?", default=str(ROOT / "models" / "squeezenet_v1.1.param"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=60)
    args = ap.parse_args()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {_load()}")
    planned = {}
    for shipped in (True, False):
        _use(shipped)
        planned[shipped] = _planned(args.param, args.threads, min_work(), None)
    _use(True)
    times: dict[bool, list] = {True: [], False: []}
    for _ in range(args.runs):
        for shipped, (once, plan, _net) in planned.items():
            plan.timing = []
            once()
            times[shipped].append(plan.timing)
            plan.timing = None
    steps = {s: _per_layer(planned[s][1], planned[s][2], times[s], 0.0) for s in planned}
    layers = planned[True][2].layers()
    total = {True: 0.0, False: 0.0}
    for key in sorted(steps[True].keys() | steps[False].keys(), key=str):
        new, old = (steps[s].get(key, (0, 0.0, ""))[1] * 1e3 for s in (True, False))
        total[True] += new
        total[False] += old
        if abs(new - old) > 0.01:
            name = layers[key].name if isinstance(key, int) else str(key)
            print(
                f"  {name:28s} {steps[True].get(key, steps[False].get(key))[2]:12s} {old:7.3f} -> {new:7.3f} ms"
            )
    print(
        f"total, {args.threads} thread(s): oneDNN's forms {total[False]:.3f} ms, NaN rule {total[True]:.3f} ms"
    )
    print(f"load {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
