"""Latency and memory of ncnn_c against the PyPI ``ncnn`` on the benchmark models.

    python benchmarks/vs_ncnn.py [--device cpu|vulkan] [--threads 2 [4 ...]] [--loops N] [--warmup N]
                                 [--warmup-seconds S]
                                 [--models NAME|PATH ...] [--png out.png] [--no-rss]
                                 [--separate [--rounds R]] [--contention N] [--int8] [--rss-only]

Every table is printed with the machine (CPU model, core count) and the load average before
and after it: figures against the PyPI ncnn mean something only on a quiet machine (its
spinning OpenMP threads collapse under load). ``--contention N`` runs N CPU-bound processes
beside the timed ones (one per core measures the "busy machine" case; the warm-up then lasts a
second at least, ``--warmup-seconds``, as ncnn_c's busy-machine rule acts after 0.3 s); ``--threads 1 2 4 8``
prints one table per thread count and says where a latency rose with more threads.

Models: every ``benchmark/*.param`` (the shared copy, else the repo's ``models/benchmark``)
with zero weights for both libraries, as ncnn's benchncnn runs them, plus SqueezeNet with
its real weights. ``--int8`` runs ``models/benchmark_int8/*_int8.param`` instead (``--models``
picks among them by name, ``squeezenet`` or ``squeezenet_int8``) with ``use_int8_inference`` on
for both libraries and the same random weights and calibrated scales for both (``python -m
ncnn_c.tools.randbin``, seed 7, fp32 weights quantized at load; written once under
``build/bench_int8/``). Both libraries run in this process, alternately (ours, ncnn, ours, ...),
so that machine load hits both alike; on the CPU both use fp32 without packing (the
oracle's options) with the same thread count; with ``--device vulkan`` both keep their
default GPU options (fp16 storage and arithmetic where the device has them, packing), and
each library is timed in a child process of its own (``--separate``, the default there):
two Vulkan devices on one GPU in one process slow each other down (on an H200, about 3 ms
per small-network inference for whichever ran after the other). ``--rounds R`` runs R pairs of
such children per model, the order swapped each round, and takes each library's median over
all of its children's timed runs: on a machine whose speed drifts by the second (a shared VM)
both libraries then sample the same spells. Peak RSS is measured per library in a child process that imports
only that library, loads the model and runs it once. A model ncnn_c cannot load or run
is listed as ``fails: <reason>`` and the run goes on. ``--rss-only`` runs only those children
(no timing): a table of peak RSS per library and the ratio.

Exit codes: 0 done (failing models included), 1 nothing could be timed or ncnn is missing,
2 usage error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ncnn_c.tools.bench import (  # noqa: E402 - needs the repo on sys.path first
    ModelError,
    UsageError,
    input_specs,
    lib_mats,
    make_inputs,
    resolve_shapes,
    run_once,
    summarize,
)

SHARED_DIR = Path("/work/shared/models/benchmark")
REPO_DIR = ROOT / "models" / "benchmark"
INT8_DIR = ROOT / "models" / "benchmark_int8"
INT8_WEIGHTS = ROOT / "build" / "bench_int8"
SQUEEZENET = (ROOT / "models" / "squeezenet_v1.1.param", ROOT / "models" / "squeezenet_v1.1.bin")
# models whose Input layer carries no shape: the size benchncnn feeds them
FALLBACK_SHAPES = {"FastestDet": (352, 352, 3)}
FP32_FLAGS = dict(
    use_vulkan_compute=False,
    use_fp16_packed=False,
    use_fp16_storage=False,
    use_fp16_arithmetic=False,
    use_packing_layout=True,  # ncnn's default and its fastest fp32 form on x86
    use_bf16_storage=False,
)


@dataclass
class Model:
    name: str
    param: Path
    weights: Path | None  # None: zero weights
    int8: bool = False  # use_int8_inference (the weights carry int8 scales)


@dataclass
class Row:
    model: Model
    ours_ms: float | None = None
    ncnn_ms: float | None = None
    ours_rss: float | None = None
    ncnn_rss: float | None = None
    fails: str = ""
    ncnn_fails: str = ""
    times: dict = field(default_factory=dict)


def int8_weights(param: Path) -> Path:
    """The random int8-scaled weights of ``param`` (made once, then read from build/)."""
    out = INT8_WEIGHTS / (param.stem + ".bin")
    if not out.is_file():
        from ncnn_c.tools.randbin import random_weights

        text = param.read_text().split("\n")
        shape = (3, 224, 224)
        for line in text[2:]:
            if line.split()[:1] == ["Input"]:
                d = dict(kv.split("=") for kv in line.split()[4:] if kv[:1] in "012" and "=" in kv)
                if all(k in d for k in "012"):
                    shape = (int(d["2"]), int(d["1"]), int(d["0"]))
                break
        INT8_WEIGHTS.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(random_weights(str(param), seed=7, input_shape=shape, int8=False))
        os.replace(tmp, out)
    return out


def discover_int8(selected: list[str] | None) -> list[Model]:
    params = sorted(INT8_DIR.glob("*_int8.param"))
    if selected:
        by_name = {p.stem.lower(): p for p in params} | {p.stem[: -len("_int8")].lower(): p for p in params}
        unknown = [s for s in selected if s.lower() not in by_name]
        if unknown:
            raise UsageError(f"unknown int8 model {unknown[0]!r}; known: {', '.join(p.stem for p in params)}")
        params = list(dict.fromkeys(by_name[s.lower()] for s in selected))
    return [Model(p.stem, p, int8_weights(p), int8=True) for p in params]


def discover(selected: list[str] | None, extra_dirs: tuple[Path, ...] = (), make=None) -> list:
    """The benchmark models (every ``*.param`` of the benchmark folder and of ``extra_dirs``,
    and SqueezeNet with its real weights), or the ``selected`` ones by name or path, each
    made by ``make(name, param, weights)`` (default: ``Model``)."""
    make = make or Model
    bench_dir = SHARED_DIR if SHARED_DIR.is_dir() else REPO_DIR
    params = sorted(bench_dir.glob("*.param")) + [p for d in extra_dirs for p in sorted(d.glob("*.param"))]
    models = [make(p.stem, p, None) for p in params]
    models.append(make(SQUEEZENET[0].stem, SQUEEZENET[0], SQUEEZENET[1]))
    if not selected:
        return models
    by_name = {m.name.lower(): m for m in models}
    out = []
    for s in selected:
        m = by_name.get(s.lower())
        if m is None and Path(s).is_file():
            p = Path(s)
            w = p.with_suffix(".bin")
            m = make(p.stem, p, w if w.is_file() else None)
        if m is None:
            raise UsageError(f"unknown model {s!r}; known: {', '.join(sorted(by_name))}")
        out.append(m)
    return out


class _Errors(logging.Handler):
    """Collects ncnn_c's error lines: the first one is the reason a model fails."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def model_shapes(model: Model):
    """Input (name, shape) pairs, read with ncnn_c even when some layer types are missing."""
    import ncnn_c
    from ncnn_c.layer import LAYER_TYPES, Layer, create_layer_cpu

    net = ncnn_c.Net()
    for t in LAYER_TYPES:  # stand-ins: only the Input layers matter here
        if t != "Input" and create_layer_cpu(t) is None:
            net.register_custom_layer(t, Layer)
    log = logging.getLogger("ncnn_c")
    errors = _Errors()
    log.addHandler(errors)
    try:
        ok = net.load_param(str(model.param)) == 0
    finally:
        log.removeHandler(errors)
    if not ok:
        raise ModelError(errors.messages[0] if errors.messages else f"cannot read {model.param}")
    return resolve_shapes(input_specs(net), None, FALLBACK_SHAPES.get(model.name))


def load_net(lib, model: Model, device: str, threads: int):
    """A loaded net of ``lib`` (ncnn_c or ncnn); ModelError with the reason when it fails."""
    net = lib.Net()
    if device == "cpu":  # on the GPU both keep their default options (fp16, packing)
        for k, v in FP32_FLAGS.items():
            setattr(net.opt, k, v)
    net.opt.use_vulkan_compute = device == "vulkan"
    net.opt.num_threads = threads
    net.opt.use_int8_inference = model.int8
    if net.load_param(str(model.param)) != 0:
        raise ModelError("load_param failed")
    weights = str(model.weights) if model.weights else lib.DataReaderFromEmpty()
    if net.load_model(weights) != 0:
        raise ModelError("load_model failed")
    return net


class Runner:
    """One library's net with its inputs, ready to time; ``error`` set when it cannot run."""

    def __init__(self, lib, model: Model, shapes, device: str, threads: int) -> None:
        self.lib = lib
        self.error = ""
        self.times: list[float] = []
        errors = _Errors()
        log = logging.getLogger("ncnn_c")
        log.addHandler(errors)
        try:
            self.net = load_net(lib, model, device, threads)
            self.inputs = make_inputs(shapes)
            self.mats = lib_mats(lib, self.inputs)
            self.outputs = self.net.output_names()
            self.run()  # a first run: fails here rather than in the timed loop
        except Exception as e:  # noqa: BLE001 - any failure is reported in the table
            self.error = errors.messages[0] if errors.messages else f"{type(e).__name__}: {e}"
        finally:
            log.removeHandler(errors)

    def run(self) -> None:
        run_once(self.lib, self.net, self.inputs, self.mats, self.outputs)

    def timed(self, keep: bool) -> None:
        if self.error:
            return
        t0 = time.perf_counter()
        try:
            self.run()
        except Exception as e:  # noqa: BLE001
            self.error = f"{type(e).__name__}: {e}"
            return
        if keep:
            self.times.append(time.perf_counter() - t0)

    def median_ms(self) -> float | None:
        return summarize(self.times)[1] if self.times and not self.error else None


def warm_up(runners: list[Runner], args) -> None:
    """Untimed runs of each runner in turn: ``args.warmup`` of them, and more until
    ``args.warmup_seconds`` have passed (ncnn_c's busy-machine rule needs 0.3 s of busy reads
    before it acts: a run beside busy processes is in its steady state after that)."""
    start = time.perf_counter()
    i = 0
    while i < args.warmup or time.perf_counter() - start < args.warmup_seconds:
        for r in runners:
            r.timed(False)
        if all(r.error for r in runners):
            return
        i += 1


def _run_child(lib_name: str, model: Model, shapes, device: str, threads: int, extra=()) -> tuple[dict, str]:
    """Run this script as a child with one library on ``model``: ({KEY: value} from its
    ``PEAK_RSS_MB float`` and ``TIMES_MS float,float,...`` lines, the last stderr line or ""
    when it exited 0)."""
    spec = [model.name, str(model.param), str(model.weights or ""), shapes, model.int8]
    cmd = [sys.executable, __file__, "--child", lib_name, "--device", device, "--threads", str(threads)]
    cmd += [*extra, "--child-model", json.dumps(spec)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {}, "timed out"
    values: dict = {}
    for line in r.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key == "PEAK_RSS_MB":
            values[key] = float(value)
        elif key == "TIMES_MS":
            values[key] = [float(v) for v in value.split(",")]
    error = "" if r.returncode == 0 else (r.stderr.strip().splitlines() or ["no output"])[-1]
    return values, error


def rss_of(lib_name: str, model: Model, shapes, device: str, threads: int) -> float | None:
    """Peak RSS (MB) of a child process that runs ``model`` once with one library."""
    values, error = _run_child(lib_name, model, shapes, device, threads)
    if "PEAK_RSS_MB" not in values:
        print(
            f"vs_ncnn: the {lib_name} RSS child for {model.name} failed: {error or 'no PEAK_RSS_MB line'}",
            file=sys.stderr,
        )
    return values.get("PEAK_RSS_MB")


def peak_rss_mb() -> float:
    """This process's peak RSS. Not getrusage: Linux carries ru_maxrss over exec, so a child
    would report its parent's peak; VmHWM belongs to the current address space only."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux


def child(args) -> int:
    name, param, weights, shapes, int8 = json.loads(args.child_model)
    model = Model(name, Path(param), Path(weights) if weights else None, int8)
    shapes = [(n, tuple(s)) for n, s in shapes]
    if args.child == "ncnn":
        import ncnn as lib
    else:
        import ncnn_c as lib
    r = Runner(lib, model, shapes, args.device, args.threads)
    if r.error:
        print(r.error, file=sys.stderr)
        return 1
    print(f"PEAK_RSS_MB {peak_rss_mb():.1f}")
    if args.child_loops:
        warm_up([r], args)
        for _ in range(args.child_loops):
            r.timed(True)
        if r.error:
            print(r.error, file=sys.stderr)
            return 1
        print("TIMES_MS " + ",".join(f"{t * 1e3:.4f}" for t in r.times))
    return 0


def timed_child(lib_name: str, model: Model, shapes, args) -> tuple[list[float], float | None, str]:
    """(timed runs in ms, peak RSS MB, error) of ``model`` timed in a child process of its own."""
    extra = ["--warmup", str(args.warmup), "--warmup-seconds", str(args.warmup_seconds)]
    extra += ["--child-loops", str(args.loops)]
    values, error = _run_child(lib_name, model, shapes, args.device, args.threads, extra)
    times = values.get("TIMES_MS") or []
    return times, values.get("PEAK_RSS_MB"), "" if times else error or "no timing"


def timed_children(model: Model, shapes, args) -> dict[str, tuple[float | None, float | None, str]]:
    """{library: (median ms over every round's timed runs, largest peak RSS MB, error)}: ``args.rounds``
    pairs of children, ncnn_c first in even rounds, the PyPI ncnn first in odd ones."""
    times: dict[str, list[float]] = {"ncnn_c": [], "ncnn": []}
    rss: dict[str, float | None] = {"ncnn_c": None, "ncnn": None}
    errors = {"ncnn_c": "", "ncnn": ""}
    for r in range(args.rounds):
        for lib in ("ncnn_c", "ncnn") if r % 2 == 0 else ("ncnn", "ncnn_c"):
            if errors[lib]:
                continue  # it failed once: its error stands, its other rounds are not run
            got, peak, errors[lib] = timed_child(lib, model, shapes, args)
            times[lib] += got
            if peak is not None:
                rss[lib] = max(peak, rss[lib] or 0.0)
    return {
        lib: (None if errors[lib] else statistics.median(times[lib]), rss[lib], errors[lib])
        for lib in ("ncnn_c", "ncnn")
    }


def fmt(v: float | None, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def machine() -> str:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return f"{model or 'unknown CPU'}, {os.cpu_count()} logical cores"


def loadavg() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def print_rss_table(rows: list[Row], args) -> None:
    print(f"peak RSS, ncnn_c vs ncnn (PyPI): device {args.device}, {args.threads} threads, one run per child")
    print(f"machine: {machine()}")
    head = f"{'model':<24} {'ours RSS MB':>12} {'ncnn RSS MB':>12} {'ratio':>8}"
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = f"{r.ours_rss / r.ncnn_rss:.2f}x" if r.ours_rss and r.ncnn_rss else "-"
        print(f"{r.model.name:<24} {fmt(r.ours_rss, '.1f'):>12} {fmt(r.ncnn_rss, '.1f'):>12} {ratio:>8}")


def separate(args) -> bool:
    """Whether each library is timed in child processes of its own (the default on Vulkan)."""
    return args.separate if args.separate is not None else args.device == "vulkan"


def print_table(rows: list[Row], args, load_before: str = "") -> None:
    if args.rss_only:
        print_rss_table(rows, args)
        return
    if separate(args):
        mode = "separate processes" + (f", {args.rounds} rounds" if args.rounds > 1 else "")
    else:
        mode = "one process, alternating"
    busy = f", {args.contention} CPU-bound processes beside it" if args.contention else ""
    int8 = ", int8 (use_int8_inference)" if args.int8 else ""
    print(
        f"ncnn_c vs ncnn (PyPI): device {args.device}{int8}, {args.threads} threads, {args.loops} loops, "
        f"median; {mode}{busy}"
    )
    print(f"machine: {machine()}; load average (1/5/15 min) before {load_before}, after {loadavg()}")
    head = (
        f"{'model':<24} {'ours ms':>10} {'ncnn ms':>10} {'ratio':>8} {'ours RSS MB':>12} {'ncnn RSS MB':>12}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if r.fails:
            print(f"{r.model.name:<24} fails: {r.fails}  (ncnn {fmt(r.ncnn_ms)} ms)")
            continue
        ratio = f"{r.ours_ms / r.ncnn_ms:.2f}x" if r.ours_ms and r.ncnn_ms else "-"
        print(
            f"{r.model.name:<24} {fmt(r.ours_ms):>10} {fmt(r.ncnn_ms):>10} {ratio:>8} "
            f"{fmt(r.ours_rss, '.1f'):>12} {fmt(r.ncnn_rss, '.1f'):>12}"
            + (f"  ncnn fails: {r.ncnn_fails}" if r.ncnn_fails else "")
        )


def write_png(rows: list[Row], path: str, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in rows if r.ours_ms is not None or r.ncnn_ms is not None]
    names = [r.model.name + (" (fails)" if r.fails else "") for r in done]
    y = range(len(done))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(done) + 1.5))
    ax.barh([i - 0.2 for i in y], [r.ours_ms or 0 for r in done], height=0.4, label="ncnn_c")
    ax.barh([i + 0.2 for i in y], [r.ncnn_ms or 0 for r in done], height=0.4, label="ncnn (PyPI)")
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    values = [v for r in done for v in (r.ours_ms, r.ncnn_ms) if v]
    if values:
        ax.set_xlim(left=min(values) / 2, right=max(values) * 1.5)  # log bars need a floor
    ax.set_xlabel("median latency, ms (log scale)")
    ax.set_title(f"ncnn_c vs ncnn: {args.device}, {args.threads} threads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "vulkan"), default="cpu")
    ap.add_argument("--threads", type=int, nargs="+", default=[2])
    ap.add_argument(
        "--contention", type=int, default=0, metavar="N", help="N CPU-bound processes beside the run"
    )
    ap.add_argument("--loops", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument(
        "--warmup-seconds",
        type=float,
        default=None,
        help="untimed runs go on at least this long (default 0, 1 with --contention)",
    )
    ap.add_argument(
        "--rounds", type=int, default=1, help="with --separate: pairs of children per model (order swapped)"
    )
    ap.add_argument("--models", nargs="+", metavar="NAME|PATH", help="model names or .param paths")
    ap.add_argument("--png", help="write a bar chart of the medians to this file")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child processes")
    ap.add_argument("--int8", action="store_true", help="the models/benchmark_int8 networks, int8 inference")
    ap.add_argument("--rss-only", action="store_true", help="only the peak-RSS children, no timing")
    ap.add_argument("--child", choices=("ncnn_c", "ncnn"), help=argparse.SUPPRESS)
    ap.add_argument("--child-model", help=argparse.SUPPRESS)
    ap.add_argument("--child-loops", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument(
        "--separate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time each library in a child process of its own (default: on for vulkan)",
    )
    args = ap.parse_args(argv)
    if args.warmup_seconds is None:
        args.warmup_seconds = 1.0 if args.contention else 0.0
    if args.child:
        args.threads = args.threads[0]
        return child(args)
    bad = args.loops < 1 or min(args.threads) < 1 or args.rounds < 1 or args.contention < 0
    if bad or args.warmup < 0 or not 0 <= args.warmup_seconds < 3600:
        print(
            "vs_ncnn: --loops, --threads and --rounds must be >= 1, --warmup(-seconds) >= 0", file=sys.stderr
        )
        return 2
    if args.rounds > 1 and not separate(args):
        print("vs_ncnn: --rounds counts child processes: it needs --separate", file=sys.stderr)
        return 2
    if args.rss_only and args.no_rss:
        print("vs_ncnn: --rss-only and --no-rss exclude each other", file=sys.stderr)
        return 2
    try:
        models = discover_int8(args.models) if args.int8 else discover(args.models)
    except UsageError as e:
        print(f"vs_ncnn: {e}", file=sys.stderr)
        return 2
    try:
        import ncnn
    except ImportError:
        print("vs_ncnn: the PyPI ncnn package is not installed", file=sys.stderr)
        return 1
    import ncnn_c

    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.contention)]
    try:
        medians: dict[int, dict[str, float | None]] = {}
        counts = list(args.threads)
        for n in counts:
            args.threads = n
            before = loadavg()
            rows = run_models(models, args, ncnn, ncnn_c)
            print_table(rows, args, before)
            medians[n] = {r.model.name: r.ours_rss if args.rss_only else r.ours_ms for r in rows}
            if args.png:
                png = args.png if len(counts) == 1 else args.png.replace(".png", f"-{n}t.png")
                write_png(rows, png, args)
                print(f"chart: {png}")
            print()
    finally:
        for p in busy:
            p.kill()
    for a, b in [] if args.rss_only else zip(counts, counts[1:], strict=False):
        worse = [m for m, v in medians[b].items() if v and medians[a].get(m) and v > medians[a][m]]
        print(f"ncnn_c slower with {b} threads than with {a}: {', '.join(worse) or 'none'}")
    return 0 if any(v is not None for t in medians.values() for v in t.values()) else 1


def run_models(models, args, ncnn, ncnn_c) -> list[Row]:
    rows = []
    for model in models:
        row = Row(model)
        rows.append(row)
        try:
            shapes = model_shapes(model)
        except (ModelError, UsageError) as e:
            row.fails = row.ncnn_fails = str(e)
            continue
        if args.rss_only:
            row.ours_rss = rss_of("ncnn_c", model, shapes, args.device, args.threads)
            row.ncnn_rss = rss_of("ncnn", model, shapes, args.device, args.threads)
            print(f"vs_ncnn: {model.name} done", file=sys.stderr)
            continue
        if separate(args):
            # the RSS reported is the timing children's peak (after the timed loops)
            got = timed_children(model, shapes, args)
            row.ours_ms, rss, row.fails = got["ncnn_c"]
            row.ncnn_ms, ncnn_rss, row.ncnn_fails = got["ncnn"]
            if not args.no_rss:
                row.ours_rss, row.ncnn_rss = rss, ncnn_rss
            print(f"vs_ncnn: {model.name} done", file=sys.stderr)
            continue
        ours = Runner(ncnn_c, model, shapes, args.device, args.threads)
        ref = Runner(ncnn, model, shapes, args.device, args.threads)
        warm_up([ours, ref], args)
        for _ in range(args.loops):
            ours.timed(True)
            ref.timed(True)
        row.fails, row.ncnn_fails = ours.error, ref.error
        row.ours_ms, row.ncnn_ms = ours.median_ms(), ref.median_ms()
        del ours, ref
        if not args.no_rss:
            if not row.fails:
                row.ours_rss = rss_of("ncnn_c", model, shapes, args.device, args.threads)
            if not row.ncnn_fails:
                row.ncnn_rss = rss_of("ncnn", model, shapes, args.device, args.threads)
        print(f"vs_ncnn: {model.name} done", file=sys.stderr)
    return rows


if __name__ == "__main__":
    sys.exit(main())
