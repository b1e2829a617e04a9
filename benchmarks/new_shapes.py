"""The cost of a new input shape: ncnn_c against the PyPI ``ncnn``, each in fresh child processes.

    python benchmarks/new_shapes.py [--models NAME ...] [--mode first sweep] [--threads 2 [4 ...]]
                                    [--sizes N|WxH ...] [--warmup-size N|WxH] [--rounds R]
                                    [--steady-loops N] [--sweep-count N] [--sweep-seed S]
                                    [--weights zero|random] [--json out.json] [--timeout S]

A network that takes any input size pays something the first time it sees a size: ncnn
allocates its blobs, ncnn_c makes a plan for the shape. This measures that first extract of
each new size against the steady extract of the same size. Each library runs in child
processes of its own (never both in one process: the ncnn child imports only ncnn_c's lazy
package and the numpy helpers of ``ncnn_c.tools.bench``, listed in the JSON as
``other_lib_modules``); every child loads the net, and each round runs one child per
library, the order swapped each round (ncnn_c first in even rounds), so that a machine whose
speed drifts samples both alike. Figures are medians over ``--rounds``
children (default 5).

Models (``--models``, default all): ``squeezenet`` (models/squeezenet_v1.1, real weights),
``mobilenet_v2`` and ``shufflenet_v2`` (models/benchmark_cpu), ``yolov4-tiny``
(models/benchmark); the last three with zero weights (``DataReaderFromEmpty``, as benchncnn
and vs_ncnn.py) or, with ``--weights random``, the same deterministic random weights for
both libraries (``ncnn_c.tools.randbin``, seed 7, written once under build/bench_new_shapes/).
The input is the first Input layer's top, the output the last layer's top; each size gets a
random 3-channel input, the same for both libraries (seeded by the size).

Both libraries get vs_ncnn.py's CPU options (``FP32_FLAGS``: fp32, no fp16 or bf16 storage
or arithmetic, ncnn's default packing) and the same ``num_threads``; light mode (the default).

``--mode first``: a child first runs a warm-up size (``--warmup-size``, default 224 for the
classifiers, 384 for YOLO, moved down by 32 while it is one of the sizes): its first extract
includes the process's one-off costs and is reported on its own row ("first of process").
Then for each of ``--sizes`` in order (default 227 160 192 256, YOLO 416 320 352 288; N is
NxN) the first extract of that size ("new size") and then ``--steady-loops`` more (default
3, their median is "steady"). The last row of a model is the sum over its new sizes.

``--mode sweep``: a letterbox-like sweep, ``--sweep-count`` sizes (default 32) drawn without
repeats from WxH with W, H multiples of 32 in 160..640 (seeded, ``--sweep-seed``; the list
is printed); for YOLOv4-tiny in 160..416: its .param's Crop layers carry the sizes of a 416
input (``3=104 4=104`` at stride 4), so a side above 416 is cropped short and the Concat
after it gets two sizes: the PyPI ncnn concatenates them anyway, ncnn_c refuses. A child
runs the warm-up size (not counted), then every sweep size once (pass 1: each a new size),
then all of them again (pass 2: each seen before, so at steady speed where the library keeps
what it made for every size). The table gives each pass's total, the ratio, and each
library's peak RSS after both passes.

Every table is printed with the machine (CPU model, core count) and the load average before
and after it; ``--threads 1 2 8`` prints one table per thread count and mode. After each
table a line compares the outputs (the first 64 values at every size, ncnn_c against ncnn).
A network that fails in a library is listed with the reason and the run goes on.
``--json`` writes every child's raw numbers.

Exit codes: 0 done (failing models included), 1 nothing could be timed for ncnn_c or the
PyPI ncnn is missing, 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import vs_ncnn  # noqa: E402 - machine and load lines, the CPU options and the loader

from ncnn_c.tools.bench import ModelError, UsageError, lib_mats, make_inputs  # noqa: E402

ROOT = vs_ncnn.ROOT
RANDOM_WEIGHTS = ROOT / "build" / "bench_new_shapes"
CLASSIFIER_SIZES = [(227, 227), (160, 160), (192, 192), (256, 256)]
YOLO_SIZES = [(416, 416), (320, 320), (352, 352), (288, 288)]
SWEEP_SIDES = (160, 640)  # the sweep: W and H multiples of 32 between these
OUT_VALUES = 64  # output values compared per size
LIBS = ("ncnn", "ncnn_c")


@dataclass
class Net:
    name: str
    param: Path
    weights: Path | None  # None: zero weights (or random ones, --weights random)
    sizes: list[tuple[int, int]]
    warmup: tuple[int, int]
    inp: str = ""
    out: str = ""
    sweep_max: int = SWEEP_SIDES[1]  # the largest side the .param is valid for


MODELS = {
    "squeezenet": Net("squeezenet", *vs_ncnn.SQUEEZENET, CLASSIFIER_SIZES, (224, 224)),
    "mobilenet_v2": Net(
        "mobilenet_v2", ROOT / "models/benchmark_cpu/mobilenet_v2.param", None, CLASSIFIER_SIZES, (224, 224)
    ),
    "shufflenet_v2": Net(
        "shufflenet_v2", ROOT / "models/benchmark_cpu/shufflenet_v2.param", None, CLASSIFIER_SIZES, (224, 224)
    ),
    "yolov4-tiny": Net(
        "yolov4-tiny",
        ROOT / "models/benchmark/yolov4-tiny.param",
        None,
        YOLO_SIZES,
        (384, 384),
        sweep_max=416,
    ),
}
ALIASES = {"squeezenet_v1.1": "squeezenet", "yolov4_tiny": "yolov4-tiny"}


def blob_names(param: Path) -> tuple[str, str]:
    """(the first Input layer's top, the last layer's top) of a text .param."""
    layers = [line.split() for line in param.read_text().splitlines()[2:] if line.strip()]

    def top(fields: list[str]) -> str:
        return fields[4 + int(fields[2])]

    inputs = [f for f in layers if f[0] == "Input"]
    if not inputs or not layers:
        raise ModelError(f"{param}: no Input layer")
    return top(inputs[0]), top(layers[-1])


def parse_size(text: str) -> tuple[int, int]:
    """``"256"`` -> (256, 256); ``"320x192"`` -> (320, 192) (W x H)."""
    parts = text.lower().split("x")
    try:
        w, h = (int(parts[0]), int(parts[-1])) if len(parts) <= 2 else (0, 0)
    except ValueError:
        w = h = 0
    if w < 1 or h < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected N or WxH, positive")
    return w, h


def sweep_grid(net: Net) -> list[tuple[int, int]]:
    """Every WxH of ``net``'s sweep but its warm-up size."""
    sides = range(SWEEP_SIDES[0], net.sweep_max + 1, 32)
    return [(w, h) for w in sides for h in sides if (w, h) != net.warmup]


def sweep_sizes(net: Net, count: int, seed: int) -> list[tuple[int, int]]:
    """``count`` distinct sizes of ``net``'s sweep grid, in a seeded order."""
    grid = sweep_grid(net)
    order = np.random.default_rng(seed).permutation(len(grid))[:count]
    return [grid[i] for i in order]


def random_weights_of(net: Net) -> Path:
    """The deterministic random weights of ``net`` (made once, then read from build/)."""
    out = RANDOM_WEIGHTS / (net.param.stem + ".bin")
    if not out.is_file():
        from ncnn_c.tools.randbin import random_weights

        w, h = net.warmup
        RANDOM_WEIGHTS.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(random_weights(str(net.param), seed=7, input_shape=(3, h, w), int8=False))
        os.replace(tmp, out)
    return out


# -- the child: one library, one net, a list of sizes ------------------------------------------


def extract(net, spec: dict, mat) -> tuple[float, np.ndarray]:
    """(seconds, output) of one inference: a fresh extractor, the input, the output."""
    t0 = time.perf_counter()
    ex = net.create_extractor()
    ex.input(spec["inp"], mat)
    ret, out = ex.extract(spec["out"])
    seconds = time.perf_counter() - t0
    if ret != 0:
        raise ModelError(f"extract({spec['out']!r}) failed ({ret})")
    return seconds, np.array(out)


def run_size(lib, net, spec: dict, size, steady: int) -> dict:
    """The first extract of ``size`` and ``steady`` more: {first_ms, steady_ms, out, error}."""
    w, h = size
    inputs = make_inputs([(spec["inp"], (w, h, 3))], seed=w * 10007 + h)
    (mat,) = lib_mats(lib, inputs)
    rec: dict = {"size": [w, h], "first_ms": None, "steady_ms": [], "error": ""}
    errors = vs_ncnn._Errors()
    log = logging.getLogger("ncnn_c")
    log.addHandler(errors)
    try:
        seconds, out = extract(net, spec, mat)
        rec["first_ms"] = seconds * 1e3
        rec["out_shape"] = list(out.shape)
        rec["out"] = out.ravel()[:OUT_VALUES].tolist()
        for _ in range(steady):
            rec["steady_ms"].append(extract(net, spec, mat)[0] * 1e3)
    except Exception as e:  # noqa: BLE001 - a size that fails is reported in the table
        rec["error"] = errors.messages[0] if errors.messages else f"{type(e).__name__}: {e}"
    finally:
        log.removeHandler(errors)
    return rec


def child(args) -> int:
    spec = json.loads(args.child_spec)
    if args.child == "ncnn":
        import ncnn as lib
    else:
        import ncnn_c as lib
    model = vs_ncnn.Model(
        spec["name"], Path(spec["param"]), Path(spec["weights"]) if spec["weights"] else None
    )
    t0 = time.perf_counter()
    try:
        net = vs_ncnn.load_net(lib, model, "cpu", spec["threads"])
    except ModelError as e:
        print(e, file=sys.stderr)
        return 1
    result: dict = {"load_ms": (time.perf_counter() - t0) * 1e3}
    result["warmup"] = run_size(lib, net, spec, spec["warmup"], spec["steady"])
    sizes = [tuple(s) for s in spec["sizes"]]
    result["passes"] = [[run_size(lib, net, spec, s, spec["steady"]) for s in sizes]]
    for _ in range(spec["passes"] - 1):
        result["passes"].append([run_size(lib, net, spec, s, 0) for s in sizes])
    result["peak_rss_mb"] = vs_ncnn.peak_rss_mb()
    # the ncnn child holds only ncnn_c's lazy package and its numpy bench helpers: no native part
    other = "ncnn_c" if args.child == "ncnn" else "ncnn"
    result["other_lib_modules"] = sorted(m for m in sys.modules if m.split(".")[0] == other)
    print("RESULT " + json.dumps(result))
    return 0


# -- the parent: children, medians, tables -----------------------------------------------------


@dataclass
class Runs:
    """Every child's result of one library on one net, or the reason it failed."""

    results: list[dict] = field(default_factory=list)
    error: str = ""


def run_child(lib: str, net: Net, args, sizes, passes: int, steady: int) -> tuple[dict | None, str]:
    spec = dict(
        name=net.name,
        param=str(net.param),
        weights=str(net.weights or ""),
        inp=net.inp,
        out=net.out,
        threads=args.threads,
        warmup=list(net.warmup),
        sizes=[list(s) for s in sizes],
        passes=passes,
        steady=steady,
    )
    cmd = [sys.executable, __file__, "--child", lib, "--child-spec", json.dumps(spec)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {args.timeout} s"
    for line in r.stdout.splitlines():
        if line.startswith("RESULT ") and r.returncode == 0:
            return json.loads(line[len("RESULT ") :]), ""
    return None, (r.stderr.strip().splitlines() or [f"exit {r.returncode}, no output"])[-1]


def run_rounds(net: Net, args, sizes, passes: int, steady: int) -> dict[str, Runs]:
    runs = {lib: Runs() for lib in LIBS}
    for r in range(args.rounds):
        for lib in ("ncnn_c", "ncnn") if r % 2 == 0 else ("ncnn", "ncnn_c"):
            if runs[lib].error:
                continue  # it failed once: its error stands, its other rounds are not run
            result, runs[lib].error = run_child(lib, net, args, sizes, passes, steady)
            if result is not None:
                runs[lib].results.append(result)
    print(f"new_shapes: {net.name} ({args.mode_now}, {args.threads} threads) done", file=sys.stderr)
    return runs


def median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def size_stats(runs: Runs, pick) -> tuple[float | None, float | None, str]:
    """(median first ms, median steady ms, error) of the size records ``pick(result)``."""
    recs = [pick(r) for r in runs.results]
    error = runs.error or next((rec["error"] for rec in recs if rec["error"]), "")
    if error:
        return None, None, error
    steady = median(median(rec["steady_ms"]) for rec in recs)
    return median(rec["first_ms"] for rec in recs), steady, ""


def pass_total(runs: Runs, index: int) -> tuple[float | None, str]:
    """(median over the children of pass ``index``'s total ms, error)."""
    totals = []
    for result in runs.results:
        recs = result["passes"][index]
        bad = next((rec for rec in recs if rec["error"]), None)
        if bad:
            return None, f"{bad['size'][0]}x{bad['size'][1]}: {bad['error']}"
        totals.append(sum(rec["first_ms"] for rec in recs))
    return median(totals), runs.error


def ratio(ours: float | None, ref: float | None) -> str:
    return f"{ours / ref:.2f}x" if ours and ref else "-"


def fmt(v: float | None) -> str:
    return vs_ncnn.fmt(v, ".1f")


def compare_outputs(all_runs: dict[str, dict[str, Runs]]) -> str:
    """A line per table: the largest |ncnn_c - ncnn| over the compared output values."""
    parts = []
    for name, runs in all_runs.items():
        if not runs["ncnn"].results or not runs["ncnn_c"].results:
            continue
        ref, ours = runs["ncnn"].results[0], runs["ncnn_c"].results[0]
        worst, shapes = 0.0, []
        for a, b in zip(
            [ref["warmup"], *ref["passes"][0]], [ours["warmup"], *ours["passes"][0]], strict=True
        ):
            if a["error"] or b["error"]:
                continue
            if a["out_shape"] != b["out_shape"]:
                shapes.append(f"{a['size'][0]}x{a['size'][1]} {b['out_shape']} vs {a['out_shape']}")
                continue
            worst = max(worst, float(np.max(np.abs(np.subtract(a["out"], b["out"])), initial=0.0)))
        parts.append(
            f"{name} max diff {worst:.2g}" + (f", shapes differ: {'; '.join(shapes)}" if shapes else "")
        )
    return f"outputs, ncnn_c vs ncnn (first {OUT_VALUES} values per size): {', '.join(parts) or '-'}"


def header(args, title: str, before: str, head: str) -> None:
    """The table's title, machine and load lines, and its column heads ``head``."""
    weights = "random weights (seed 7)" if args.weights == "random" else "zero weights"
    print(
        f"{title}: ncnn_c vs ncnn (PyPI), cpu fp32, {args.threads} threads, light mode; "
        f"median of {args.rounds} fresh processes per library; squeezenet real weights, others {weights}"
    )
    print(
        f"machine: {vs_ncnn.machine()}; load average (1/5/15 min) before {before}, after {vs_ncnn.loadavg()}"
    )
    print(head)
    print("-" * len(head))


def cells(nf, of, ns, os_) -> str:
    """First and steady ms of both libraries, with their ratios."""
    return f"{fmt(nf):>10} {fmt(of):>12} {ratio(of, nf):>7} {fmt(ns):>11} {fmt(os_):>13} {ratio(os_, ns):>7}"


def first_table(nets: list[Net], args) -> tuple[dict, bool]:
    before = vs_ncnn.loadavg()
    all_runs = {n.name: run_rounds(n, args, n.sizes, 1, args.steady_loops) for n in nets}
    head = (
        f"{'model':<14} {'size':>9} {'kind':<17} {'ncnn first':>10} {'ncnn_c first':>12} {'ratio':>7}"
        f" {'ncnn steady':>11} {'ncnn_c steady':>13} {'ratio':>7}"
    )
    header(args, "first extract of each new input size", before, head)
    timed = False
    for net in nets:
        runs = all_runs[net.name]
        picks = [("first of process", net.warmup, lambda r: r["warmup"])]
        picks += [("new size", s, lambda r, i=i: r["passes"][0][i]) for i, s in enumerate(net.sizes)]
        sums: dict[str, list] = {lib: [] for lib in LIBS}
        for kind, (w, h), pick in picks:
            stats = {lib: size_stats(runs[lib], pick) for lib in LIBS}
            label = f"{net.name:<14} {f'{w}x{h}':>9} {kind:<17}"
            failed = [f"{lib} fails: {stats[lib][2]}" for lib in LIBS if stats[lib][2]]
            if kind == "new size":
                for lib in LIBS:
                    sums[lib].append(stats[lib][:2])
            (nf, ns, _), (of, os_, _) = stats["ncnn"], stats["ncnn_c"]
            timed = timed or of is not None
            if failed and nf is None and of is None:
                print(f"{label} {'; '.join(failed)}")
                continue
            print(f"{label} {cells(nf, of, ns, os_)}" + (f"  {'; '.join(failed)}" if failed else ""))
        total = {
            lib: [
                None if any(v[k] is None for v in sums[lib]) else sum(v[k] for v in sums[lib]) for k in (0, 1)
            ]
            for lib in LIBS
        }
        (nf, ns), (of, os_) = total["ncnn"], total["ncnn_c"]
        print(f"{net.name:<14} {'sum':>9} {'new sizes':<17} {cells(nf, of, ns, os_)}")
    print(compare_outputs(all_runs))
    return all_runs, timed


def sweep_table(nets: list[Net], args) -> tuple[dict, bool]:
    before = vs_ncnn.loadavg()
    sizes = {n.name: sweep_sizes(n, args.sweep_count, args.sweep_seed) for n in nets}
    all_runs = {n.name: run_rounds(n, args, sizes[n.name], 2, 0) for n in nets}
    head = (
        f"{'model':<14} {'pass':<22} {'ncnn ms':>10} {'ncnn_c ms':>10} {'ratio':>7}"
        f" {'ncnn RSS MB':>12} {'ncnn_c RSS MB':>14}"
    )
    header(args, f"letterbox sweep of {args.sweep_count} input sizes, total ms per pass", before, head)
    timed = False
    for net in nets:
        runs = all_runs[net.name]
        rss = {lib: median(r["peak_rss_mb"] for r in runs[lib].results) for lib in LIBS}
        for index, what in enumerate(("1: every size new", "2: the same again")):
            (nt, ne), (ot, oe) = pass_total(runs["ncnn"], index), pass_total(runs["ncnn_c"], index)
            timed = timed or ot is not None
            failed = [f"{lib} fails: {e}" for lib, e in (("ncnn", ne), ("ncnn_c", oe)) if e]
            memory = (
                f" {vs_ncnn.fmt(rss['ncnn'], '.1f'):>12} {vs_ncnn.fmt(rss['ncnn_c'], '.1f'):>14}"
                if index
                else ""
            )
            print(
                f"{net.name:<14} {what:<22} {fmt(nt):>10} {fmt(ot):>10} {ratio(ot, nt):>7}{memory}"
                + (f"  {'; '.join(failed)}" if failed else "")
            )
    for listed in dict.fromkeys(tuple(v) for v in sizes.values()):
        who = ", ".join(n for n, v in sizes.items() if tuple(v) == listed)
        print(f"sizes of {who} (seed {args.sweep_seed}): " + " ".join(f"{w}x{h}" for w, h in listed))
    print(compare_outputs(all_runs))
    return all_runs, timed


def select(names: list[str] | None, args) -> list[Net]:
    out = []
    for s in names or list(MODELS):
        key = ALIASES.get(s.lower(), s.lower())
        if key not in MODELS:
            raise UsageError(f"unknown model {s!r}; known: {', '.join(MODELS)}")
        net = MODELS[key]
        if args.sizes:
            net.sizes = list(args.sizes)
        if args.warmup_size:
            net.warmup = args.warmup_size
        while net.warmup in net.sizes:  # the warm-up must be a size the timed rows do not use
            net.warmup = (net.warmup[0] - 32, net.warmup[1] - 32)
        if min(net.warmup) < 32:
            raise UsageError(f"{net.name}: no warm-up size left: give one with --warmup-size")
        if not 1 <= args.sweep_count <= len(sweep_grid(net)):
            raise UsageError(f"--sweep-count: {net.name}'s sweep has {len(sweep_grid(net))} sizes")
        net.inp, net.out = blob_names(net.param)
        if net.weights is None and args.weights == "random":
            net.weights = random_weights_of(net)
        out.append(net)
    return list({n.name: n for n in out}.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", metavar="NAME", help=f"default all: {', '.join(MODELS)}")
    ap.add_argument("--mode", nargs="+", choices=("first", "sweep"), default=["first", "sweep"])
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument(
        "--sizes", type=parse_size, nargs="+", metavar="N|WxH", help="--mode first: the new sizes"
    )
    ap.add_argument("--warmup-size", type=parse_size, metavar="N|WxH", help="the first size of each process")
    ap.add_argument("--rounds", type=int, default=5, help="fresh processes per library (default 5)")
    ap.add_argument("--steady-loops", type=int, default=3, help="extracts after each first one (default 3)")
    ap.add_argument("--sweep-count", type=int, default=32, help="sizes of the sweep (default 32)")
    ap.add_argument("--sweep-seed", type=int, default=0)
    ap.add_argument(
        "--weights", choices=("zero", "random"), default="zero", help="of the nets without a .bin"
    )
    ap.add_argument("--json", help="write every child's raw numbers to this file")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per child process (default 600)")
    ap.add_argument("--child", choices=LIBS, help=argparse.SUPPRESS)
    ap.add_argument("--child-spec", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    if min(args.threads) < 1 or args.rounds < 1 or args.steady_loops < 1:
        print("new_shapes: --threads, --rounds and --steady-loops must be >= 1", file=sys.stderr)
        return 2
    try:
        nets = select(args.models, args)
    except UsageError as e:
        print(f"new_shapes: {e}", file=sys.stderr)
        return 2
    if importlib.util.find_spec("ncnn") is None:
        print("new_shapes: the PyPI ncnn package is not installed", file=sys.stderr)
        return 1
    raw: dict = {"machine": vs_ncnn.machine(), "argv": sys.argv[1:] if argv is None else argv, "tables": []}
    timed = False
    for n in list(args.threads):
        args.threads = n
        for mode in args.mode:
            args.mode_now = mode
            before = vs_ncnn.loadavg()
            all_runs, ok = (first_table if mode == "first" else sweep_table)(nets, args)
            timed = timed or ok
            print()
            raw["tables"].append(
                dict(
                    mode=mode,
                    threads=n,
                    load_before=before,
                    load_after=vs_ncnn.loadavg(),
                    models={
                        name: {lib: {"results": r.results, "error": r.error} for lib, r in runs.items()}
                        for name, runs in all_runs.items()
                    },
                )
            )
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))
        print(f"raw numbers: {args.json}")
    return 0 if timed else 1


if __name__ == "__main__":
    sys.exit(main())
