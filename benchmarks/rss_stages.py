"""Where peak RSS goes: each stage of a vs_ncnn RSS child, per mapping, for both libraries.

    python benchmarks/rss_stages.py [--models NAME ...] [--threads 1] [--lib ncnn_c|ncnn|both]
                                    [--top 8] [--min-mb 0.25]

``vs_ncnn.py --rss-only`` gives one number per library (the child's VmHWM). This runs the same
child (same model, options, inputs and extracts, with ``vs_ncnn``'s own functions) and stops
after each stage to print VmRSS, VmHWM, anonymous and file-backed RSS, and the mappings whose
resident size changed most since the stage before (``[heap]``, ``[anon]``, each library by file
name): the stages are python, numpy, the harness's imports, importing the library, load_param,
load_model, the inputs, the first extract (for ncnn_c also inside it: the numpy recording, the
plan's build, libdnnl's code given back, the plan's check run) and a second extract. The header
says what changes RSS between two machines running the same code: CPU, cores, the kernel's
transparent huge page settings, Python, numpy, PYTHONDONTWRITEBYTECODE (our modules compiled
from source at each start), and each child's totals of huge-page-backed memory.

It runs in a few seconds per model and library; it is meant for the machine where a ratio is
off, to say which mapping and which stage make the difference.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_MODELS = ["nanodet_m", "squeezenet", "blazeface"]


def status() -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon, RssFile of this process, MB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) / 1024
    return out


def mappings() -> tuple[collections.Counter, dict[str, float]]:
    """Resident KiB per mapping name (a file's base name, ``[heap]``, ``[anon]`` ...) and the
    process's totals of huge-page-backed memory (MB)."""
    rss: collections.Counter = collections.Counter()
    huge = collections.Counter()
    name = "[anon]"
    with open("/proc/self/smaps", encoding="ascii", errors="replace") as f:
        for line in f:
            head = line.split()
            if not head:
                continue
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                name = os.path.basename(head[5]) if len(head) >= 6 else "[anon]"
            elif head[0] == "Rss:":
                rss[name] += int(head[1])
            elif head[0] in ("AnonHugePages:", "FilePmdMapped:", "ShmemPmdMapped:"):
                huge[head[0][:-1]] += int(head[1])
    return rss, {k: v / 1024 for k, v in huge.items()}


class Stages:
    def __init__(self, top: int, min_mb: float) -> None:
        self.top, self.min_kb = top, min_mb * 1024
        self.prev: collections.Counter = collections.Counter()

    def __call__(self, name: str) -> None:
        s = status()
        print(
            f"{name:<16} RSS {s['VmRSS']:7.1f}  HWM {s['VmHWM']:7.1f}  anon {s['RssAnon']:7.1f}  "
            f"file {s['RssFile']:6.1f}",
            flush=True,
        )
        cur, _ = mappings()
        diff = {k: cur[k] - self.prev[k] for k in set(cur) | set(self.prev)}
        for k, v in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[: self.top]:
            if abs(v) >= self.min_kb:
                print(f"{'':<18}{v / 1024:+7.2f} MB  {k}  (now {cur[k] / 1024:.1f})")
        self.prev = cur


def hook_native_plan(stage: Stages) -> None:
    """Stages inside ncnn_c's first extract: wrap the executor's NativePlan and release_code
    (a no-op where those names moved: the first extract is then one stage)."""
    try:
        from ncnn_c.net.native import executor
    except ImportError:
        return
    make, release = getattr(executor, "NativePlan", None), getattr(executor, "release_code", None)
    if make is None or release is None:
        return

    def native_plan(*args, **kwargs):
        stage("  recorded")
        plan = make(*args, **kwargs)
        stage("  plan built")
        run = plan.run

        def checked(*a, **k):
            ret = run(*a, **k)
            stage("  plan run")
            return ret

        plan.run = checked
        return plan

    def release_code(*args, **kwargs):
        release(*args, **kwargs)
        stage("  code released")

    executor.NativePlan = native_plan
    executor.release_code = release_code


def child(args) -> int:
    stage = Stages(args.top, args.min_mb)
    stage("python")
    import numpy  # noqa: F401 - a stage of its own

    stage("numpy")
    sys.path.insert(0, str(HERE))
    import vs_ncnn

    stage("harness")
    if args.child == "ncnn":
        import ncnn as lib
    else:
        import ncnn_c as lib
    stage(f"import {args.child}")
    name, param, weights, shapes = json.loads(args.child_model)
    model = vs_ncnn.Model(name, Path(param), Path(weights) if weights else None)
    net = lib.Net()
    for k, v in vs_ncnn.FP32_FLAGS.items():
        setattr(net.opt, k, v)
    net.opt.num_threads = args.threads
    if net.load_param(str(model.param)) != 0:
        print("load_param failed", file=sys.stderr)
        return 1
    stage("load_param")
    if net.load_model(str(model.weights) if model.weights else lib.DataReaderFromEmpty()) != 0:
        print("load_model failed", file=sys.stderr)
        return 1
    stage("load_model")
    inputs = vs_ncnn.make_inputs([(n, tuple(s)) for n, s in shapes])
    mats = vs_ncnn.lib_mats(lib, inputs)
    outputs = net.output_names()
    stage("inputs")
    if args.child == "ncnn_c":
        hook_native_plan(stage)
    vs_ncnn.run_once(lib, net, inputs, mats, outputs)
    stage("extract 1")
    vs_ncnn.run_once(lib, net, inputs, mats, outputs)
    stage("extract 2")
    _, huge = mappings()
    print("huge pages at the end, MB: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(huge.items())))
    return 0


def read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "-"


def header() -> None:
    import numpy

    sys.path.insert(0, str(HERE))
    import vs_ncnn

    thp = "/sys/kernel/mm/transparent_hugepage"
    print(f"machine: {vs_ncnn.machine()}; kernel {platform.release()}")
    print(f"THP enabled: {read(thp + '/enabled')}; defrag: {read(thp + '/defrag')}")
    print(
        f"Python {platform.python_version()} ({sys.executable}), numpy {numpy.__version__}, "
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lib", choices=("ncnn_c", "ncnn", "both"), default="both")
    ap.add_argument("--top", type=int, default=8, help="mappings listed per stage")
    ap.add_argument("--min-mb", type=float, default=0.25, help="smallest change listed")
    ap.add_argument("--child", choices=("ncnn_c", "ncnn"), help=argparse.SUPPRESS)
    ap.add_argument("--child-model", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    sys.path.insert(0, str(HERE))
    import vs_ncnn

    try:
        models = vs_ncnn.discover(args.models)
    except vs_ncnn.UsageError as e:
        print(f"rss_stages: {e}", file=sys.stderr)
        return 2
    header()
    libs = ("ncnn_c", "ncnn") if args.lib == "both" else (args.lib,)
    failed = 0
    for model in models:
        shapes = vs_ncnn.model_shapes(model)
        spec = json.dumps([model.name, str(model.param), str(model.weights or ""), shapes])
        for lib in libs:
            print(f"\n== {model.name}, {lib}, {args.threads} thread(s)", flush=True)
            cmd = [
                sys.executable,
                __file__,
                "--child",
                lib,
                "--child-model",
                spec,
                "--threads",
                str(args.threads),
            ]
            cmd += ["--top", str(args.top), "--min-mb", str(args.min_mb)]
            failed += subprocess.run(cmd, timeout=600).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
