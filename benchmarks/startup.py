"""Process start to the first result: ncnn_c against the PyPI ``ncnn`` (issue 14 §5).

    python benchmarks/startup.py [--runs N] [--backend vulkan|cpu ...] [--no-ncnn] [--early]
                                 [--model PARAM BIN] [--shape W,H,C] [--no-bytecode]
                                 [--importtime] [--json out.json]

Each run is a fresh child process timed from its start (the parent's ``time.monotonic()``
just before it spawns the child, passed in ``NCNN_C_STARTUP_T0``; the same clock in every
process on Linux) to the first result, with the breakdown of what the script does, in the
order an application does it:

* ``python``: the interpreter up to the script's first line (``site``, the editable-install
  finder, ...); ``/proc/self/stat``'s start time gives the same at 10 ms resolution, printed
  as a cross-check;
* ``import``: ``import numpy`` and ``import ncnn_c`` (or ``ncnn``);
* ``load_param``: ``Net()``, ``opt.use_vulkan_compute``, ``load_param``;
* ``device``: ``net.vulkan_device()`` (Vulkan only): what the script still waits for the
  Vulkan instance and device after ``load_param``;
* ``cache`` (ncnn_c on Vulkan): a ``PipelineCache`` for that device, ``load_cache`` of the
  file a warm-up run saved, ``opt.pipeline_cache``: the warm start. The PyPI ``ncnn`` keeps
  no pipeline cache in Python; its warm start is the second start, with the driver's disk
  cache (Mesa's or NVIDIA's) filled by the warm-up run;
* ``--early`` adds ``ncnn_c-early`` on Vulkan: the script's first lines are ``import
  ncnn_c`` and ``ncnn_c.start_gpu_device()``, then ``import numpy`` and the rest as above, so
  the driver starts before numpy is imported (the idiom ``docs/performance.md`` describes);
* ``load_model``, and ``extract``: the first inference (extractor, input, the output as a
  numpy array).

Both libraries use their default options (on the GPU fp16 storage and arithmetic where the
device has them, packing; on the CPU ncnn_c's native plan), SqueezeNet v1.1 with its real
weights unless ``--model``. Before the timed runs one untimed run per library and backend
warms the caches (page cache, pipeline cache file, driver cache, bytecode). The timed runs
go round-robin over the configurations so that machine load hits each alike; every stage is
the median over ``--runs``, and the total is the median of the totals. ncnn_c's own
``gpu.device.init_timings()`` adds when and on which thread its instance and device were
created, and the CPU seconds of the whole process are given beside the wall time.

Bytecode: the children run with ``PYTHONPYCACHEPREFIX`` set to a directory of the system's
temporary folder (and ``PYTHONDONTWRITEBYTECODE`` removed), so that ncnn_c's modules load
from bytecode as an installed package's do; ``--no-bytecode`` keeps the environment as it is
(then a source checkout under ``PYTHONDONTWRITEBYTECODE=1`` compiles every module at each
start). ``--importtime`` runs one more child per configuration under ``python -X importtime``
and prints the imports that cost the most.

Exit codes: 0 done, 1 a configuration failed, 2 usage error.
"""

from __future__ import annotations

import os
import sys
import time

T0_ENV = "NCNN_C_STARTUP_T0"


def _child(lib: str, backend: str, param: str, model: str, cache_file: str, shape: str) -> None:
    """One start, timed; prints ``STARTUP {json}``. Imports nothing before the first mark."""
    t0 = float(os.environ[T0_ENV])
    marks = [("python", time.monotonic())]

    def mark(stage: str) -> None:
        marks.append((stage, time.monotonic()))

    early = lib == "ncnn_c-early"
    if early:  # the fast-start idiom: the driver starts before anything else is imported
        import ncnn_c

        if backend == "vulkan":
            ncnn_c.start_gpu_device()
    import numpy as np

    ncnn = __import__("ncnn" if lib == "ncnn" else "ncnn_c")
    mark("import")
    vulkan = backend == "vulkan"
    net = ncnn.Net()
    net.opt.use_vulkan_compute = vulkan
    if net.load_param(param) != 0:
        raise SystemExit("load_param failed")
    mark("load_param")
    cache = None
    if vulkan:
        vkdev = ncnn.get_gpu_device(0) if lib == "ncnn" else net.vulkan_device()
        if vkdev is None:
            raise SystemExit("no Vulkan device")
        mark("device")
        if lib != "ncnn":
            cache = ncnn.PipelineCache(vkdev)
            if os.path.exists(cache_file):
                cache.load_cache(cache_file)
            net.opt.pipeline_cache = cache
            mark("cache")
    if net.load_model(model) != 0:
        raise SystemExit("load_model failed")
    mark("load_model")
    w, h, c = (int(v) for v in shape.split(","))
    x = np.random.default_rng(0).random((c, h, w), dtype=np.float32)
    ex = net.create_extractor()
    ex.input(net.input_names()[0], ncnn.Mat(x))
    ret, out = ex.extract(net.output_names()[0])
    if ret != 0:
        raise SystemExit(f"extract failed ({ret})")
    np.asarray(out)
    mark("extract")
    cpu_s = time.process_time()

    import json

    r: dict = {"stages": {}, "cpu_s": cpu_s, "total_s": marks[-1][1] - t0}
    prev = t0
    for stage, t in marks:
        r["stages"][stage] = t - prev
        prev = t
    r["proc_python_s"] = _proc_age() - (time.monotonic() - marks[0][1])
    if lib != "ncnn" and vulkan:
        from ncnn_c.gpu import device

        timings = getattr(device, "init_timings", None)
        if timings is not None:
            r["device_init"] = {k: (v - t0 if k.endswith("_at") else v) for k, v in timings().items()}
        if cache is not None and not os.path.exists(cache_file):
            cache.save_cache(cache_file)
    print("STARTUP " + json.dumps(r), flush=True)


def _proc_age() -> float:
    """Seconds since this process started, from /proc/self/stat (clock ticks since boot)."""
    with open("/proc/self/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start_ticks = int(fields[19])  # field 22 of the whole line
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    _child(*sys.argv[2:8])
    sys.exit(0)

import argparse  # noqa: E402 - the child above runs before anything else is imported
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SQUEEZENET = (ROOT / "models" / "squeezenet_v1.1.param", ROOT / "models" / "squeezenet_v1.1.bin")
STAGES = ("python", "import", "load_param", "device", "cache", "load_model", "extract")
WORK = Path(tempfile.gettempdir()) / "ncnn_c_startup"


def child_env(bytecode: bool) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(WORK / "pycache")
    return env


def run_child(cfg: tuple[str, str], args, env: dict, extra: tuple[str, ...] = ()) -> dict:
    lib, backend = cfg
    cache_file = str(WORK / f"{Path(args.model[0]).stem}.{lib}.vkcache")
    cmd = [
        sys.executable,
        *extra,
        __file__,
        "--child",
        lib,
        backend,
        args.model[0],
        args.model[1],
        cache_file,
        args.shape,
    ]
    env = dict(env)
    env[T0_ENV] = repr(time.monotonic())
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    for line in reversed(res.stdout.splitlines()):
        if line.startswith("STARTUP "):
            r = json.loads(line[len("STARTUP ") :])
            if extra:
                r["stderr"] = res.stderr
            return r
    tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {res.returncode}: {tail[:300]}"}


def importtime_report(stderr: str, top: int = 15) -> list[tuple[float, float, str]]:
    """(self ms, cumulative ms, module) of the imports that cost the most, from -X importtime."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cum, name = line[len("import time:") :].split("|")
        rows.append((int(own) / 1000, int(cum) / 1000, name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def fmt_s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="timed starts per configuration (median; default 7)")
    ap.add_argument("--backend", action="append", choices=("vulkan", "cpu"), help="default: both")
    ap.add_argument("--no-ncnn", action="store_true", help="only ncnn_c")
    ap.add_argument(
        "--early", action="store_true", help="add ncnn_c-early on Vulkan: start_gpu_device() before numpy"
    )
    ap.add_argument("--model", nargs=2, metavar=("PARAM", "BIN"), default=[str(p) for p in SQUEEZENET])
    ap.add_argument("--shape", default="227,227,3", help="the first input's W,H,C (default 227,227,3)")
    ap.add_argument("--no-bytecode", action="store_true", help="run the children in this environment as is")
    ap.add_argument(
        "--importtime", action="store_true", help="also print the costliest imports per configuration"
    )
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--json", help="write the raw per-run numbers here")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    backends = args.backend or ["vulkan", "cpu"]
    libs = ["ncnn_c"] if args.no_ncnn else ["ncnn_c", "ncnn"]
    configs = [(lib, b) for b in backends for lib in libs]
    if args.early and "vulkan" in backends:
        configs.insert(configs.index(("ncnn_c", "vulkan")) + 1, ("ncnn_c-early", "vulkan"))
        libs.append("ncnn_c-early")
    WORK.mkdir(parents=True, exist_ok=True)
    for lib in libs:  # a fresh warm cache for this checkout's shaders
        Path(WORK / f"{Path(args.model[0]).stem}.{lib}.vkcache").unlink(missing_ok=True)
    env = child_env(not args.no_bytecode)

    print(f"# {Path(args.model[0]).name}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
          f"bytecode {'as the environment has it' if args.no_bytecode else 'cached in ' + str(WORK / 'pycache')}")  # fmt: skip
    failed = False
    for cfg in configs:  # warm-up: page cache, bytecode, pipeline cache file, driver cache
        r = run_child(cfg, args, env)
        if "error" in r:
            print(f"{cfg[0]} {cfg[1]}: {r['error']}")
            failed = True
    runs: dict[tuple[str, str], list[dict]] = {c: [] for c in configs}
    for _ in range(args.runs):
        for cfg in configs:
            r = run_child(cfg, args, env)
            if "error" in r:
                print(f"{cfg[0]} {cfg[1]}: {r['error']}")
                failed = True
                continue
            runs[cfg].append(r)
    print(f"# load after: {os.getloadavg()[0]:.2f}; median of {args.runs} starts, seconds")

    names = [f"{lib} {b}" for lib, b in configs]
    print(f"{'stage':<22}" + "".join(f"{n:>20}" for n in names))

    def med(cfg, get) -> float | None:
        vals = [v for v in (get(r) for r in runs[cfg]) if v is not None]
        return statistics.median(vals) if vals else None

    for stage in STAGES:
        cells = [med(c, lambda r, s=stage: r["stages"].get(s)) for c in configs]
        if any(v is not None for v in cells):
            print(f"{stage:<22}" + "".join(f"{fmt_s(v):>20}" for v in cells))
    print(f"{'first result':<22}" + "".join(f"{fmt_s(med(c, lambda r: r['total_s'])):>20}" for c in configs))
    print(f"{'CPU seconds':<22}" + "".join(f"{fmt_s(med(c, lambda r: r['cpu_s'])):>20}" for c in configs))
    print(
        f"{'python (/proc/stat)':<22}"
        + "".join(f"{fmt_s(med(c, lambda r: r['proc_python_s'])):>20}" for c in configs)
    )
    for cfg in configs:
        inits = [r["device_init"] for r in runs[cfg] if r.get("device_init")]
        if inits:
            keys = sorted({k for d in inits for k in d if isinstance(d[k], (int, float))})
            desc = ", ".join(f"{k} {statistics.median(d[k] for d in inits if k in d):.3f}" for k in keys)
            print(f"{cfg[0]} {cfg[1]} device creation (s; *_at from process start): {desc}")

    if args.importtime:
        for cfg in configs:
            r = run_child(cfg, args, env, ("-X", "importtime"))
            if "error" in r:
                continue
            print(
                f"\n# {cfg[0]} {cfg[1]}: costliest imports (self ms, cumulative ms; -X importtime inflates both)"
            )
            for own, cum, name in importtime_report(r["stderr"]):
                print(f"  {own:7.1f} {cum:8.1f}  {name}")
    if args.json:
        Path(args.json).write_text(json.dumps({f"{lib} {b}": rs for (lib, b), rs in runs.items()}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
