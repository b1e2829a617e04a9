"""What the Vulkan path costs per dispatch, and what replaying recorded extracts saves.

    python benchmarks/dispatch_overhead.py [--loops N] [--models NAME ...]

Per model (the benchmark networks with zero weights, SqueezeNet with its real weights),
with ncnn_c's default GPU options: the dispatches and segments one extract records, the
median latency when every extract records its command buffers again (``replay_capacity =
0``, what every extract cost before replay) and when it replays the recording of its input
shape, and the recording cost per dispatch ((record - replay) / dispatches): the Python
work per layer that replay removes. Both are measured alternately in one process.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from vs_ncnn import discover, load_net, model_shapes  # noqa: E402

import ncnn_c  # noqa: E402
from ncnn_c.net.vulkan.forward import _Segment  # noqa: E402
from ncnn_c.tools.bench import lib_mats, make_inputs, run_once  # noqa: E402


def median(v: list[float]) -> float:
    v = sorted(v)
    return v[len(v) // 2]


def measure(model, loops: int) -> dict:
    shapes = model_shapes(model)
    nets = {}
    for name, capacity in (("record", 0), ("replay", 8)):
        net = load_net(ncnn_c, model, "vulkan", 1)
        net.replay_capacity = capacity
        nets[name] = net
    inputs = make_inputs(shapes)
    mats = lib_mats(ncnn_c, inputs)
    times: dict[str, list[float]] = {"record": [], "replay": []}
    for i in range(loops + 2):
        for name, net in nets.items():
            t0 = time.perf_counter()
            run_once(ncnn_c, net, inputs, mats, net.output_names())
            if i >= 2:  # the first runs record (and warm the driver)
                times[name].append(time.perf_counter() - t0)
    dispatches = segments = 0
    for recs in nets["replay"]._vulkan.replays._roots.values():
        stack = list(recs[:1])
        while stack:
            rec = stack.pop()
            stack.extend(rec.children.values())
            for step in rec.steps:
                if isinstance(step, _Segment):
                    segments += 1
                    dispatches += step.cmd.dispatch_count
    rec_ms, rep_ms = median(times["record"]) * 1e3, median(times["replay"]) * 1e3
    return dict(
        layers=len(nets["replay"].layers()),
        dispatches=dispatches,
        segments=segments,
        record_ms=rec_ms,
        replay_ms=rep_ms,
        us_per_dispatch=(rec_ms - rep_ms) * 1e3 / max(1, dispatches),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", type=int, default=10)
    ap.add_argument("--models", nargs="+", metavar="NAME")
    args = ap.parse_args(argv)
    if ncnn_c.get_gpu_count() == 0:
        print("no Vulkan device", file=sys.stderr)
        return 1
    print(f"device: {ncnn_c.get_gpu_device(0).info.device_name}")
    head = f"{'model':<20}{'layers':>7}{'disp':>6}{'segs':>5}{'record ms':>11}{'replay ms':>11}{'us/disp':>9}"
    print(head)
    print("-" * len(head))
    for model in discover(args.models):
        try:
            r = measure(model, args.loops)
        except Exception as e:  # noqa: BLE001 - reported in the table
            print(f"{model.name:<20} fails: {type(e).__name__}: {e}")
            continue
        print(
            f"{model.name:<20}{r['layers']:>7}{r['dispatches']:>6}{r['segments']:>5}"
            f"{r['record_ms']:>11.2f}{r['replay_ms']:>11.2f}{r['us_per_dispatch']:>9.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
