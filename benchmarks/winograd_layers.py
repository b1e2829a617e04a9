"""One 3x3 stride-1 convolution in the native plan as each form: direct, Winograd F(6,3), F(4,3), F(2,3).

For each shape a small network (an Input, a 1x1 convolution so that the layer reads the
layout the plan gives it, the 3x3 layer with ReLU) is built once per form
(``NCNN_C_WINOGRAD``) and its native segment is run alternately with the others; printed
per form: the minimum and the median in ms. The 1x1 convolution and the reorders in and out
are in every figure, so compare the forms of one shape, not shapes. One thread is timed in
process CPU time (a loaded machine steals wall time), more threads in wall time. This is the
measurement ``ops/winograd.py``'s cost model was fitted to (docs/decisions.md).

    python benchmarks/winograd_layers.py [--threads 1] [--repeat 12] [--forms 0 63 43 23] CxOCxHxW ...

e.g. ``64x64x224x224 512x512x14x14`` (VGG16's first and last stage).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# each form's plan at the thread count asked: not the busy-machine rule's one-thread plan,
# which a 2-CPU machine takes while another task stays runnable (docs/design.md)
os.environ.setdefault("NCNN_C_CONTENTION", "0")

import ncnn_c  # noqa: E402
from ncnn_c._native import dnnl  # noqa: E402
from ncnn_c.net.native.ops import winograd  # noqa: E402
from ncnn_c.tools.randbin import random_weights  # noqa: E402


def segment(c: int, oc: int, h: int, w: int, form: str, threads: int, tmp: Path):
    """(run the layer's native segment once, the form the plan took, what must stay alive)."""
    os.environ["NCNN_C_WINOGRAD"] = form
    text = "\n".join([
        "7767517", "3 3", f"Input in 0 1 data 0={w} 1={h} 2={c}",
        f"Convolution c0 1 1 data a 0={c} 1=1 5=1 6={c * c}",
        f"Convolution c1 1 1 a out 0={oc} 1=3 4=1 5=1 6={oc * c * 9} 9=1",
    ]) + "\n"  # fmt: skip
    path = tmp / "winograd_layer.param"
    path.write_text(text)
    net = ncnn_c.Net()
    net.opt.num_threads = threads
    if (
        net.load_param_mem(text) != 0
        or net.load_model_mem(random_weights(str(path), seed=1, input_shape=(c, h, w))) != 0
    ):
        raise SystemExit("winograd_layers: the network did not load")
    x = ncnn_c.Mat(np.random.default_rng(0).standard_normal((c, h, w)).astype(np.float32))
    for _ in range(2):  # the first records the plan, the second runs it
        ex = net.create_extractor()
        ex.input("data", x)
        if ex.extract("out")[0] != 0:
            raise SystemExit("winograd_layers: extract failed")
    plans = [p for ps in net._native.plans._plans.values() for p in ps]
    if len(plans) != 1 or any(s.steps is None for s in plans[0].segments):
        raise SystemExit("winograd_layers: the network is not one native segment")
    plan = plans[0]
    seg = plan.segments[0]
    keep, binds = [], []
    for mem, _blob in seg.imports:
        a = np.array(x.numpy())
        keep.append(a)
        binds.append((mem, a.ctypes.data))
    for mem, _blob, _shape in seg.exports:
        out = ncnn_c.Mat(w, h, oc)
        keep.append(out)
        binds.append((mem, out.data_ptr()))
    runner = dnnl.Runner(dnnl.get())
    return (lambda: runner.run(seg.steps, threads, binds)), winograd.forms(plan).get("c1", "?"), (net, keep)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="+", metavar="CxOCxHxW")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=12)
    ap.add_argument("--forms", nargs="+", default=["0", "63", "43", "23"], help="NCNN_C_WINOGRAD values")
    args = ap.parse_args(argv)
    if dnnl.get() is None or winograd.kernels() is None:
        print("winograd_layers: the native plan or the _winograd extension is not available", file=sys.stderr)
        return 1
    clock = time.process_time if args.threads == 1 else time.perf_counter
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    print(f"threads {args.threads}, {args.repeat} runs, min / median ms; load average {os.getloadavg()}")
    for spec in args.shapes:
        c, oc, h, w = (int(v) for v in spec.split("x"))
        runs = [segment(c, oc, h, w, f, args.threads, tmp) for f in args.forms]
        times: list[list[float]] = [[] for _ in runs]
        for _ in range(args.repeat):
            for (run, _form, _keep), t in zip(runs, times, strict=True):
                t0 = clock()
                run()
                t.append(clock() - t0)
        cells = [
            f"{form}={min(t) * 1e3:.2f}/{statistics.median(t) * 1e3:.2f}"
            for (_run, form, _keep), t in zip(runs, times, strict=True)
        ]
        print(
            f"{c:4d} -> {oc:4d} {h:4d}x{w:<4d} rule: {winograd.choose(c, oc, h, w, winograd.nhwc_lanes())}  "
            + "  ".join(cells)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
