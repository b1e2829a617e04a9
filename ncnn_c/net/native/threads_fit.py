"""Fits ``threads.MIN_WORK``: per-layer times of native plans whose steps all run on one
thread and all on ``--threads``, and the threshold that gives the least total.

    python -m ncnn_c.net.native.threads_fit MODEL.param [...] [--threads N] [--runs R]
        [--quantile Q] [--input WxHxC] [--verbose]

Each model's plans run in turn (one thread, then N, then one ...) so that the machine's load
hits both alike; a step's time is its ``--quantile`` over the runs (0, the default: the least,
what a quiet machine gives). Zero weights, as the benchmarks.
"""

from __future__ import annotations

import os

from .threads import min_work


def _planned(param: str, threads: int, work_limit: int, shape):
    """(run once, its plan, the net) of ``param`` (zero weights) at ``threads``, the plan
    built with ``MIN_WORK`` = ``work_limit`` (huge: every step on one thread, 0: none)."""
    import ncnn_c

    from ...tools.bench import input_specs, make_inputs, resolve_shapes

    os.environ["NCNN_C_STEP_WORK"] = str(work_limit)
    # each plan at the count asked: on a busy small machine the contention rule would swap
    # in a one-thread plan whose steps are not the ones timed
    os.environ["NCNN_C_CONTENTION"] = "0"
    net = ncnn_c.Net()
    net.opt.num_threads = threads
    net.opt.use_vulkan_compute = False
    net.opt.use_fp16_storage = net.opt.use_fp16_packed = net.opt.use_fp16_arithmetic = False
    if net.load_param(param) != 0 or net.load_model(ncnn_c.DataReaderFromEmpty()) != 0:
        raise SystemExit(f"cannot load {param}")
    inputs = make_inputs(resolve_shapes(input_specs(net), [shape] if shape else None, (352, 352, 3)))
    mats = [ncnn_c.Mat(arr).clone() for _, arr in inputs]
    outputs = [b.name for i, b in enumerate(net.blobs()) if net._view.consumer_counts[i] == 0]

    def once() -> None:
        ex = net.create_extractor()
        for (name, _), m in zip(inputs, mats, strict=True):
            ex.input(name, m)
        for name in outputs:
            ex.extract(name)

    once()
    plans = [p for ps in net._native.plans._plans.values() for p in ps]
    if len(plans) != 1:
        raise SystemExit(f"{param}: {len(plans)} plans, expected one")
    return once, plans[0], net


def _per_layer(plan, net, runs: list[list[float]], quantile: float) -> dict:
    """{layer index or ("out", k): (work, seconds, type)}: each step's ``quantile`` over the
    ``runs`` (0: the least, what a quiet machine gives), summed per layer."""
    owners = [o for s in plan.segments if s.steps is not None for o in s.owners]
    out: dict = {}
    exports = 0
    layers = net.layers()
    for i, (li, work) in enumerate(owners):
        ts = sorted(r[i] for r in runs)
        t = ts[min(len(ts) - 1, int(quantile * len(ts)))]
        if li < 0:
            key: object = ("out", exports)
            exports += 1
        else:
            key = li
        w, acc, _ = out.get(key, (work, 0.0, ""))
        out[key] = (max(w, work), acc + t, layers[li].type if li >= 0 else "(copy out)")
    return out


def main(argv: list[str] | None = None) -> int:
    """Per-layer times at one thread and at ``--threads`` (two plans of each model, run in
    turn so that the machine's load hits both alike), and the MIN_WORK that would have given
    the least total over every model given."""
    import argparse

    from ...tools.bench import parse_shape

    ap = argparse.ArgumentParser(prog="python -m ncnn_c.net.native.threads_fit", description=main.__doc__)
    ap.add_argument("params", nargs="+", help=".param files (zero weights)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--input", type=parse_shape, default=None, help="WxHxC of the (one) input")
    ap.add_argument("--quantile", type=float, default=0.0, help="of each step's times (0: the least)")
    ap.add_argument("--verbose", action="store_true", help="print every layer")
    args = ap.parse_args(argv)
    limit = min_work()
    rows = []  # (model, key, work, t1, tn, type)
    for param in args.params:
        planned = [
            _planned(param, n, w, args.input) for n, w in ((1, 0), (args.threads, 1 << 62), (args.threads, 0))
        ]
        times: list[list[list[float]]] = [[], [], []]
        for r in range(args.runs + 2):
            for (once, plan, _net), acc in zip(planned, times, strict=True):
                plan.timing = []
                once()
                if r >= 2:
                    acc.append(plan.timing)
                plan.timing = None
        # the plan of one thread in a plan of --threads (created under one thread too) is
        # what the rule would run; the plan at num_threads=1 shows that they agree
        one = _per_layer(planned[1][1], planned[1][2], times[1], args.quantile)
        many = _per_layer(planned[2][1], planned[2][2], times[2], args.quantile)
        name = os.path.basename(param)
        for key in one.keys() & many.keys():
            rows.append((name, key, one[key][0], one[key][1], many[key][1], one[key][2]))
        mine = [r for r in rows if r[0] == name]
        t1, tn = sum(r[3] for r in mine), sum(r[4] for r in mine)
        rule = sum(r[3] if r[2] < limit else r[4] for r in mine)
        solo = sum(v[1] for v in _per_layer(planned[0][1], planned[0][2], times[0], args.quantile).values())
        print(
            f"{name}: steps' sum {t1 * 1e3:.3f} ms on one thread ({solo * 1e3:.3f} at num_threads=1), "
            f"{tn * 1e3:.3f} at {args.threads}, {rule * 1e3:.3f} with MIN_WORK {limit}",
            flush=True,
        )
    if args.verbose:
        for name, key, work, t1, tn, typ in sorted(rows, key=lambda r: r[2]):
            print(
                f"{name:22s} {key!s:6s} {typ:22s} work {work:10d}  1: {t1 * 1e6:8.1f} us  "
                f"{args.threads}: {tn * 1e6:8.1f} us"
            )

    def total(w: int) -> float:
        return sum(r[3] if r[2] < w else r[4] for r in rows)

    cands = sorted({0, *(r[2] for r in rows), 1 << 62})
    best = min(cands, key=total)
    print(f"least total {total(best) * 1e3:.3f} ms with MIN_WORK {best} (layers below it on one thread)")
    near = [w for w in cands if total(w) <= total(best) * 1.01]
    print(f"within 1% of it: MIN_WORK {min(near)} .. {max(near)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
