"""Latency of ncnn_c against ONNX Runtime on the same graphs with the same weights.

    python benchmarks/vs_onnxruntime.py [--threads 1 2 4 8 16] [--models NAME|PATH ...]
                                        [--loops N] [--warmup N] [--rounds R] [--ncnn]
                                        [--separate | --no-separate]

ONNX Runtime runs what ncnn_c runs: each .param with its weights goes through
``benchmarks/ncnn_to_onnx.py`` (the same graph, the weights ncnn_c loaded; checked against the
PyPI ncnn by ``tests/test_onnx_export.py``), not a torchvision network of the same name.
Models: every ``benchmark/*.param`` (the shared copy, else ``models/benchmark``), the
``models/benchmark_cpu`` networks (GoogLeNet, MobileNetV2, ResNet18, ShuffleNetV2) and SqueezeNet
v1.1 with its real weights; the others get random weights (``ncnn_c.tools.randbin``, seed 7,
calibrated at the model's input size), written once with their .onnx under ``build/bench_onnx/``
(rewritten when the .param or the converter is newer). Networks with a detection layer (SSD,
YOLO) are timed up to it, in both libraries: ncnn_c extracts the blobs the detection layer reads,
which are the ONNX graph's outputs (``ncnn_to_onnx --heads``); NMS is not timed.

ncnn_c runs with its defaults (the native plan on the CPU) except the numerics, fp32 with
packing, as ``vs_ncnn.py`` sets them for the CPU; ONNX Runtime (CPUExecutionProvider) with
``ORT_ENABLE_ALL`` graph optimizations, ``intra_op_num_threads`` = the thread count,
``inter_op_num_threads`` 1 and sequential execution. Each library is timed in a child process
of its own (``--separate``, the default): ncnn_c's oneDNN (GNU OpenMP) and ONNX Runtime's pool of
spinning threads in one process take the cores from each other. ``--no-separate`` runs both in
this process, alternately (ncnn_c, ORT, ncnn_c, ...). ``--rounds R`` runs R children per library
and model, the order swapped each round, and takes the median over all their timed runs.
``--ncnn`` adds the PyPI ncnn (fp32, packing) as a third column. Each timed run is one
inference: ncnn_c a new extractor, the inputs fed, every output extracted; ORT one
``session.run`` of every output.

Every table is printed with the CPU model, the core count and the load average before and
after it: spinning thread pools make figures from a busy machine mean little. A model that
cannot be converted or run is listed with its reason and the run goes on.

Exit codes: 0 done (failing models included), 1 nothing could be timed or ONNX Runtime is
missing, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
for p in (ROOT, HERE):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

CPU_DIR = ROOT / "models" / "benchmark_cpu"
CACHE = ROOT / "build" / "bench_onnx"
LIBS = ("ncnn_c", "ort", "ncnn")


@dataclass
class Model:
    name: str
    param: Path
    weights: Path | None = None  # the real .bin; None: random weights in CACHE
    onnx: Path | None = None
    shapes: list = field(default_factory=list)  # (input name, ncnn-order shape)
    outputs: list = field(default_factory=list)  # the blobs both libraries compute
    fails: str = ""


@dataclass
class Row:
    model: Model
    ms: dict = field(default_factory=dict)  # library -> median ms
    errors: dict = field(default_factory=dict)  # library -> reason


def discover(selected: list[str] | None) -> list[Model]:
    """vs_ncnn.py's models and ``models/benchmark_cpu``'s."""
    from vs_ncnn import discover as ncnn_models

    return ncnn_models(selected, (CPU_DIR,), Model)


def _newer(target: Path, *sources: Path) -> bool:
    """Whether ``target`` exists and is newer than every source."""
    return target.is_file() and all(target.stat().st_mtime >= s.stat().st_mtime for s in sources)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def prepare(model: Model) -> None:
    """Input shapes, weights and the .onnx of ``model`` (made once under CACHE); ``fails`` set
    with the reason when it cannot be converted."""
    import ncnn_to_onnx
    from vs_ncnn import model_shapes

    try:
        model.shapes = [(n, tuple(s)) for n, s in model_shapes(model)]
        numpy_shapes = {n: tuple(reversed(s)) for n, s in model.shapes}
        if model.weights is None:
            model.weights = CACHE / f"{model.name}.bin"
            if not _newer(model.weights, model.param):
                from ncnn_c.tools.randbin import random_weights

                calib = next(iter(numpy_shapes.values()))
                _write(model.weights, random_weights(str(model.param), seed=7, input_shape=calib))
        model.onnx = CACHE / f"{model.name}.onnx"
        heads = any(
            line.split()[:1] and line.split()[0] in ncnn_to_onnx.DETECTION_TYPES
            for line in model.param.read_text().split("\n")
        )
        if not _newer(model.onnx, model.param, model.weights, Path(ncnn_to_onnx.__file__)):
            onnx_model = ncnn_to_onnx.convert(model.param, model.weights, numpy_shapes, heads=heads)
            _write(model.onnx, onnx_model.SerializeToString())
        import onnx

        model.outputs = [o.name for o in onnx.load(str(model.onnx), load_external_data=False).graph.output]
    except Exception as e:  # noqa: BLE001 - any failure is reported in the table
        model.fails = f"{type(e).__name__}: {e}"


class OrtRunner:
    """An ONNX Runtime session of the converted model with the same inputs as ncnn_c's."""

    def __init__(self, model: Model, threads: int) -> None:
        import onnxruntime as ort

        from ncnn_c.tools.bench import make_inputs

        self.error = ""
        self.times: list[float] = []
        try:
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            self.sess = ort.InferenceSession(str(model.onnx), so, providers=["CPUExecutionProvider"])
            # make_inputs: the arrays ncnn_c's runner feeds (same seed), with the batch axis
            self.feed = {name: a[None] for name, a in make_inputs(model.shapes)}
            self.outputs = list(model.outputs)
            self.run()
        except Exception as e:  # noqa: BLE001
            self.error = f"{type(e).__name__}: {e}"

    def run(self) -> None:
        self.sess.run(self.outputs, self.feed)

    def timed(self, keep: bool) -> None:
        if self.error:
            return
        t0 = time.perf_counter()
        self.run()
        if keep:
            self.times.append(time.perf_counter() - t0)


def make_runner(lib: str, model: Model, threads: int):
    """A runner (``timed``, ``times``, ``error``) of ``lib`` on ``model``."""
    if lib == "ort":
        return OrtRunner(model, threads)
    from vs_ncnn import Model as NcnnModel
    from vs_ncnn import Runner

    if lib == "ncnn":
        import ncnn as mod
    else:
        import ncnn_c as mod
    r = Runner(mod, NcnnModel(model.name, model.param, model.weights), model.shapes, "cpu", threads)
    if not r.error:
        r.outputs = list(model.outputs)  # the ONNX graph's outputs (a detection layer's inputs)
    return r


def time_runners(runners, warmup: int, loops: int) -> None:
    """Warm-up, then ``loops`` timed runs of each runner in turn."""
    for _ in range(warmup):
        for r in runners:
            r.timed(False)
    for _ in range(loops):
        for r in runners:
            r.timed(True)


def child(args) -> int:
    spec = json.loads(args.child_model)
    model = Model(spec["name"], Path(spec["param"]), Path(spec["weights"]), Path(spec["onnx"]))
    model.shapes = [(n, tuple(s)) for n, s in spec["shapes"]]
    model.outputs = spec["outputs"]
    r = make_runner(args.child, model, args.threads[0])
    if not r.error:
        time_runners([r], args.warmup, args.loops)
    if r.error:
        print(r.error, file=sys.stderr)
        return 1
    print("TIMES_MS " + ",".join(f"{t * 1e3:.4f}" for t in r.times))
    return 0


def timed_child(lib: str, model: Model, args, threads: int) -> tuple[list[float], str]:
    """(timed runs in ms, error) of ``lib`` on ``model`` in a child process of its own."""
    spec = dict(
        name=model.name,
        param=str(model.param),
        weights=str(model.weights),
        onnx=str(model.onnx),
        shapes=model.shapes,
        outputs=model.outputs,
    )
    cmd = [sys.executable, __file__, "--child", lib, "--threads", str(threads), "--loops", str(args.loops)]
    cmd += ["--warmup", str(args.warmup), "--child-model", json.dumps(spec)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return [], "timed out"
    for line in r.stdout.splitlines():
        if line.startswith("TIMES_MS "):
            return [float(v) for v in line.split(" ", 1)[1].split(",")], ""
    return [], (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]


def run_model(model: Model, libs: list[str], args, threads: int) -> Row:
    row = Row(model)
    if model.fails:
        return row
    times: dict[str, list[float]] = {lib: [] for lib in libs}
    if args.separate:
        for rnd in range(args.rounds):
            for lib in libs if rnd % 2 == 0 else libs[::-1]:
                if lib in row.errors:
                    continue
                got, error = timed_child(lib, model, args, threads)
                times[lib] += got
                if error:
                    row.errors[lib] = error
    else:
        runners = {lib: make_runner(lib, model, threads) for lib in libs}
        time_runners(list(runners.values()), args.warmup, args.loops)
        for lib, r in runners.items():
            if r.error:
                row.errors[lib] = r.error
            times[lib] = [t * 1e3 for t in r.times]
    row.ms = {lib: statistics.median(t) for lib, t in times.items() if t and lib not in row.errors}
    return row


def machine() -> str:
    from vs_ncnn import machine as vs_machine

    return vs_machine()


def loadavg() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def print_table(rows: list[Row], libs: list[str], args, threads: int, before: str) -> None:
    import onnxruntime as ort

    mode = "separate processes" + (f", {args.rounds} rounds" if args.rounds > 1 else "")
    if not args.separate:
        mode = "one process, alternating"
    print(
        f"ncnn_c vs ONNX Runtime {ort.__version__}: CPU, {threads} threads, {args.loops} loops, median; {mode}"
    )
    print(f"machine: {machine()}; load average (1/5/15 min) before {before}, after {loadavg()}")
    head = f"{'model':<22} {'ncnn_c ms':>10} {'ORT ms':>10} {'ratio':>8}"
    if "ncnn" in libs:
        head += f" {'ncnn ms':>10}"
    print(head)
    print("-" * len(head))
    ratios = []
    for r in rows:
        name = r.model.name
        if r.model.fails:
            print(f"{name:<22} fails: {r.model.fails}")
            continue
        ours, ref = r.ms.get("ncnn_c"), r.ms.get("ort")
        ratio = f"{ours / ref:.2f}x" if ours and ref else "-"
        if ours and ref:
            ratios.append(ours / ref)
        line = f"{name:<22} {fmt(ours):>10} {fmt(ref):>10} {ratio:>8}"
        if "ncnn" in libs:
            line += f" {fmt(r.ms.get('ncnn')):>10}"
        notes = [f"{lib} fails: {e}" for lib, e in r.errors.items()]
        print(line + ("  " + "; ".join(notes) if notes else ""))
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(
            f"geometric mean of ncnn_c / ORT over {len(ratios)} models: {geo:.2f}x (below 1: ncnn_c faster)"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument("--models", nargs="+", metavar="NAME|PATH", help="model names or .param paths")
    ap.add_argument("--loops", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1, help="with --separate: children per library and model")
    ap.add_argument("--ncnn", action="store_true", help="add the PyPI ncnn as a third column")
    ap.add_argument(
        "--separate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time each library in a child process of its own (default: on)",
    )
    ap.add_argument("--child", choices=LIBS, help=argparse.SUPPRESS)
    ap.add_argument("--child-model", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    if args.loops < 1 or min(args.threads) < 1 or args.rounds < 1 or args.warmup < 0:
        print("vs_onnxruntime: --loops, --threads and --rounds must be >= 1, --warmup >= 0", file=sys.stderr)
        return 2
    if args.rounds > 1 and not args.separate:
        print("vs_onnxruntime: --rounds counts child processes: it needs --separate", file=sys.stderr)
        return 2
    from ncnn_c.tools.bench import UsageError

    try:
        models = discover(args.models)
    except UsageError as e:
        print(f"vs_onnxruntime: {e}", file=sys.stderr)
        return 2
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        print("vs_onnxruntime: needs onnx and onnxruntime: pip install -e '.[bench]'", file=sys.stderr)
        return 1
    libs = ["ncnn_c", "ort"]
    if args.ncnn:
        try:
            import ncnn  # noqa: F401
        except ImportError:
            print("vs_onnxruntime: --ncnn: the PyPI ncnn is not installed", file=sys.stderr)
            return 1
        libs.append("ncnn")
    for m in models:
        prepare(m)
    timed = False
    for n in args.threads:
        before = loadavg()
        rows = []
        for m in models:
            rows.append(run_model(m, libs, args, n))
            print(f"vs_onnxruntime: {m.name} done ({n} threads)", file=sys.stderr)
        print_table(rows, libs, args, n, before)
        print()
        timed = timed or any(r.ms for r in rows)
    return 0 if timed else 1


if __name__ == "__main__":
    sys.exit(main())
