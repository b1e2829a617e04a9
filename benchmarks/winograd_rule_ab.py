"""Whole networks with the Winograd rule of today against the rule before F(2,3) (2026-12-02).

    python benchmarks/winograd_rule_ab.py [--threads 1 2] [--loops 15] MODEL ...

For each model and thread count, two nets are loaded (zero weights): one whose native plan
picks each 3x3 layer's form by ``ops/winograd.choose`` and one by the rule before it (direct,
F(6,3) or F(4,3); every weight read at ``WEIGHT_READ``). Their plans run alternately in one
process, so the machine's load hits both alike; prints the medians and new / old.

Exit codes: 0 done, 2 usage error.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import vs_ncnn  # noqa: E402

import ncnn_c  # noqa: E402
from ncnn_c.datareader import DataReaderFromEmpty  # noqa: E402
from ncnn_c.net.native.ops import winograd  # noqa: E402
from ncnn_c.tools.bench import lib_mats, make_inputs, run_once  # noqa: E402

NEW = winograd.choose


def old_choose(c: int, oc: int, oh: int, ow: int, lanes: int) -> int:
    saved = winograd.STREAM_READ
    winograd.STREAM_READ = winograd.WEIGHT_READ
    try:
        return min((0, 6, 4), key=lambda m: winograd.cost(m, c, oc, oh, ow, lanes))
    finally:
        winograd.STREAM_READ = saved


def load(param: str, threads: int):
    net = ncnn_c.Net()
    net.opt.num_threads = threads
    net.opt.use_vulkan_compute = False
    if net.load_param(param) != 0 or net.load_model(DataReaderFromEmpty()) != 0:
        raise SystemExit(f"winograd_rule_ab: cannot load {param}")
    return net


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--loops", type=int, default=15)
    args = ap.parse_args(argv)
    try:
        models = vs_ncnn.discover(args.models)
    except vs_ncnn.UsageError as e:
        print(f"winograd_rule_ab: {e}", file=sys.stderr)
        return 2
    print(f"# {vs_ncnn.machine()}; median of {args.loops}, alternating; load {vs_ncnn.loadavg()}")
    for m in models:
        inputs = make_inputs(vs_ncnn.model_shapes(m))
        mats = lib_mats(ncnn_c, inputs)
        for threads in args.threads:
            nets = []
            for rule in (old_choose, NEW):
                winograd.choose = rule  # read when the plan is built: the first extracts below
                try:
                    net = load(str(m.param), threads)
                    run = functools.partial(run_once, ncnn_c, net, inputs, mats, net.output_names())
                    for _ in range(3):
                        run()
                finally:
                    winograd.choose = NEW
                nets.append(run)
            times: list[list[float]] = [[], []]
            for _ in range(args.loops):
                for run, t in zip(nets, times, strict=True):
                    t0 = time.perf_counter()
                    run()
                    t.append(time.perf_counter() - t0)
            old, new = (statistics.median(t) * 1e3 for t in times)
            print(
                f"{m.name:18s} {threads} threads  old rule {old:8.2f} ms  new {new:8.2f} ms  new/old {new / old:.3f}"
            )
    print(f"# load {vs_ncnn.loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
