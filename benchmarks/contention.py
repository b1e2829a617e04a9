"""ncnn_c's latency quiet and beside CPU-bound processes, per OpenMP wait policy (issue 15).

    python benchmarks/contention.py [--models NAME ...] [--threads N] [--busy N] [--loops N]
                                    [--lib ncnn_c|ncnn] [--env "NAME=VALUE ..." ...]

For each ``--env`` setting (default: none, ncnn_c's own ``GOMP_SPINCOUNT``), every model is
timed in a fresh child process of ``vs_ncnn.py`` (median of ``--loops`` extracts after two
warm-ups and at least a second of them), first on the quiet machine, then with ``--busy`` processes running ``while True:
pass`` (default: one per core). Prints one line per setting: quiet / busy = ratio per model,
and the load average. ``--lib ncnn`` times the PyPI ncnn instead. The wait policies are
libgomp's, read when it starts, hence a child per setting: ``OMP_WAIT_POLICY=active``
(workers never sleep), ``=passive``, ``GOMP_SPINCOUNT=<rounds>``. docs/decisions.md has
the figures of the 16-core host and the 2-core VM.

Exit codes: 0 done, 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_ncnn  # noqa: E402 - the benchmark's model list and timing child


def time_models(models, lib: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, float | str]:
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        out: dict[str, float | str] = {}
        for m in models:
            times, _rss, err = vs_ncnn.timed_child(lib, m, vs_ncnn.model_shapes(m), args)
            out[m.name] = statistics.median(times) if times else err
        return out
    finally:
        os.environ.clear()
        os.environ.update(saved)


def cell(quiet, busy) -> str:
    if isinstance(quiet, float) and isinstance(busy, float):
        return f"{quiet:.2f}/{busy:.2f}={busy / quiet:.2f}x"
    return f"{quiet}/{busy}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["squeezenet", "resnet50", "mobilenet", "shufflenet"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--loops", type=int, default=40)
    ap.add_argument("--lib", choices=("ncnn_c", "ncnn"), default="ncnn_c")
    ap.add_argument("--env", nargs="+", default=[""], metavar="NAME=VALUE", help="wait policies to compare")
    args = ap.parse_args(argv)
    envs = []
    for e in args.env:  # a setting: "" (none), or NAME=VALUE pairs separated by spaces
        env = {}
        for pair in e.split():
            name, eq, value = pair.partition("=")
            if not (eq and name):
                print(f"contention: --env wants NAME=VALUE, not {pair!r}", file=sys.stderr)
                return 2
            env[name] = value
        envs.append(env)
    if args.threads < 1 or args.busy < 0 or args.loops < 1:
        print("contention: --threads and --loops must be >= 1, --busy >= 0", file=sys.stderr)
        return 2
    try:
        models = vs_ncnn.discover(args.models)
    except vs_ncnn.UsageError as e:
        print(f"contention: {e}", file=sys.stderr)
        return 2
    # a second of warm-up: ncnn_c's busy-machine rule acts after 0.3 s of busy reads, and a
    # run beside busy processes is in its steady state after that
    timing = argparse.Namespace(
        warmup=2, warmup_seconds=1.0, loops=args.loops, device="cpu", threads=args.threads
    )
    print(f"# {vs_ncnn.machine()}; {args.lib}, {args.threads} threads, {args.busy} busy processes, "
          f"median of {args.loops}; quiet/busy ms = ratio")  # fmt: skip
    for env in envs:
        quiet = time_models(models, args.lib, timing, env)
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
        try:
            time.sleep(0.5)
            busy = time_models(models, args.lib, timing, env)
        finally:
            for p in hogs:
                p.kill()
            for p in hogs:
                p.wait()
        label = " ".join(f"{k}={v}" for k, v in env.items()) or "default"
        cells = " ".join(f"{n} {cell(quiet[n], busy[n])}" for n in quiet)
        print(f"{label:28s} {cells}  load {vs_ncnn.loadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
