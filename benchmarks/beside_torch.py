"""ncnn_c's latency in one process beside another parallel runtime that has just worked (issue 29).

    python benchmarks/beside_torch.py [--models NAME ...] [--threads N ...] [--loops N]
                                      [--other torch|numpy] [--libs ncnn_c ncnn]

Users mix runtimes in one process: PyTorch or OpenCV for pre- and post-processing, then the
network. The other runtime's worker threads may still spin on the cores when the network
starts. Each library runs in a child process of its own with the other runtime imported. It
is timed twice at every thread count:

- ``alone``: extracts one after another (the other runtime imported, idle);
- ``beside``: before each extract, the other runtime runs a parallel matrix product with as
  many threads (``torch.mm`` of 512x512 fp32, or numpy's BLAS with ``--other numpy``); only
  the extract is timed.

Prints one line per (model, threads, library): the two medians (ms) and beside/alone, with
the load average. A ratio near 1 means the plan's threads degrade gracefully next to the
other runtime's; ncnn's spinning OpenMP workers and ours compete for the same cores.

Exit codes: 0 done, 1 a child failed, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_ncnn  # noqa: E402 - model discovery, input shapes and the Runner

LIBS = ("ncnn_c", "ncnn")


class Other:
    """The other runtime's parallel op: a fp32 matrix product at ``threads`` threads."""

    def __init__(self, name: str, threads: int, n: int = 512) -> None:
        self.name = name
        if name == "torch":
            import torch

            torch.set_num_threads(threads)
            self.a = torch.rand(n, n)
            self.b = torch.rand(n, n)
            self.mm = torch.mm
        else:  # numpy's BLAS reads its thread count when it starts: the parent's env sets it
            import numpy as np

            rng = np.random.default_rng(0)
            self.a = rng.random((n, n), dtype=np.float32)
            self.b = rng.random((n, n), dtype=np.float32)
            self.mm = np.matmul

    def run(self) -> None:
        self.mm(self.a, self.b)


def child(args) -> int:
    name, param, weights, shapes, int8 = json.loads(args.child_model)
    model = vs_ncnn.Model(name, Path(param), Path(weights) if weights else None, int8)
    shapes = [(n, tuple(s)) for n, s in shapes]
    other = Other(args.other, args.threads[0])
    if args.child == "ncnn":
        import ncnn as lib
    else:
        import ncnn_c as lib
    r = vs_ncnn.Runner(lib, model, shapes, "cpu", args.threads[0])
    if r.error:
        print(r.error, file=sys.stderr)
        return 1
    for _ in range(3):
        other.run()
        r.run()
    alone, beside = [], []
    for _ in range(args.loops):
        t0 = time.perf_counter()
        r.run()
        alone.append(time.perf_counter() - t0)
    for _ in range(args.loops):
        other.run()
        t0 = time.perf_counter()
        r.run()
        beside.append(time.perf_counter() - t0)
    print(f"ALONE_MS {statistics.median(alone) * 1e3:.4f}")
    print(f"BESIDE_MS {statistics.median(beside) * 1e3:.4f}")
    return 0


def run_child(lib: str, model, shapes, threads: int, args) -> tuple[float | None, float | None, str]:
    spec = [model.name, str(model.param), str(model.weights or ""), shapes, model.int8]
    cmd = [sys.executable, __file__, "--child", lib, "--threads", str(threads), "--other", args.other]
    cmd += ["--loops", str(args.loops), "--child-model", json.dumps(spec)]
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, None, "timed out"
    values = {}
    for line in r.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key in ("ALONE_MS", "BESIDE_MS"):
            values[key] = float(value)
    if r.returncode != 0 or len(values) != 2:
        return None, None, (r.stderr.strip().splitlines() or ["no output"])[-1]
    return values["ALONE_MS"], values["BESIDE_MS"], ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["squeezenet", "mobilenet_v2", "shufflenet_v2"])
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--loops", type=int, default=30)
    ap.add_argument("--other", choices=("torch", "numpy"), default="torch")
    ap.add_argument("--libs", nargs="+", choices=LIBS, default=list(LIBS))
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--child", choices=LIBS, help=argparse.SUPPRESS)
    ap.add_argument("--child-model", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.loops < 1 or min(args.threads) < 1:
        ap.error("--loops and --threads must be at least 1")
    if args.child:
        return child(args)
    try:
        models = vs_ncnn.discover(args.models, (vs_ncnn.ROOT / "models" / "benchmark_cpu",))
    except vs_ncnn.UsageError as e:
        ap.error(str(e))
    print(f"# {vs_ncnn.machine()}; other runtime: {args.other}; load {vs_ncnn.loadavg()}")
    print(f"{'model':<16} {'threads':>7} {'library':<7} {'alone ms':>9} {'beside ms':>9} {'ratio':>6}")
    failed = False
    for m in models:
        shapes = vs_ncnn.model_shapes(m)
        for t in args.threads:
            for lib in args.libs:
                alone, beside, err = run_child(lib, m, shapes, t, args)
                if err:
                    failed = True
                    print(f"{m.name:<16} {t:>7} {lib:<7} failed: {err}")
                    continue
                assert alone is not None and beside is not None
                print(f"{m.name:<16} {t:>7} {lib:<7} {alone:>9.2f} {beside:>9.2f} {beside / alone:>5.2f}x")
    print(f"# load {vs_ncnn.loadavg()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
