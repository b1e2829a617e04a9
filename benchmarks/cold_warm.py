"""Cold and warm starts on the GPU: ncnn_c with its pipeline cache against the PyPI ``ncnn``.

    python benchmarks/cold_warm.py [--models NAME|PATH ...] [--driver-cache-off] [--no-blob]
                                   [--no-ncnn] [--pipeline-threads N] [--png out.png]
                                   [--json out.json] [--timeout S]

Per network (every ``benchmark/*.param``, the shared copy else ``models/benchmark``, with
deterministic random weights from ``ncnn_c.tools.randbin``; plus SqueezeNet with its real
weights), each step in its own fresh process, with ncnn's default GPU options (fp16, packing):

* ncnn_c cold: no pipeline cache; ``load_model``, the first inference (inputs of the Input
  layers' shapes), shaders compiled, pipelines created; the cache is then saved. The table
  also gives the pipelines the cold ``load_model`` created and its time per pipeline
  (issue 6's "ms per pipeline"); "pipelines" counts those of the first inference too.
* ncnn_c warm: the same with that cache file loaded first (its load is timed separately).
* with ``--no-blob`` also "warm, no blob": the cache with its driver blob section stripped
  (``cachefile.decode``/``encode``), which shows what the driver blob is worth (the H200's
  driver compiles in ``vkCreateComputePipelines``; lavapipe defers to the first dispatch).
* the PyPI ``ncnn``: a first and a second process. It keeps no pipeline cache of its own in
  Python, so its second start only gains what the driver's disk cache gives.

The driver's own disk cache starts empty for each network and library (a fresh
``MESA_SHADER_CACHE_DIR`` / ``__GL_SHADER_DISK_CACHE_PATH``), so "cold" is cold and "warm" is
the second start of a machine. ``--driver-cache-off`` turns it off entirely in the children
(``MESA_SHADER_CACHE_DISABLE=true``, ``__GL_SHADER_DISK_CACHE=0``): every start then pays the
driver's compile unless our driver blob covers it.

Prints a table and writes a PNG chart (matplotlib) and, with ``--json``, the raw numbers.
A network that fails in one library is listed with the reason and the run goes on.

Exit codes: 0 done, 1 nothing could be measured, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHARED_DIR = Path("/work/shared/models/benchmark")
REPO_DIR = ROOT / "models" / "benchmark"
SQUEEZENET = (ROOT / "models" / "squeezenet_v1.1.param", ROOT / "models" / "squeezenet_v1.1.bin")
# models whose Input layer carries no shape: the size benchncnn feeds them
FALLBACK_SHAPES = {"FastestDet": [352, 352, 3]}

# -- the child: one start of one library, timed ------------------------------------------------


def child_ours(a: dict) -> dict:
    import numpy as np

    t_import = time.perf_counter()
    import ncnn_c as ncnn
    from ncnn_c.tools import bench

    vkdev = ncnn.get_gpu_device(0)
    if vkdev is None:
        raise RuntimeError("no Vulkan device")
    t0 = time.perf_counter()
    setup_s = t0 - t_import
    cache = ncnn.PipelineCache(vkdev)
    loaded = None
    if a.get("cache"):
        loaded = cache.load_cache(a["cache"])
    cache_load_s = time.perf_counter() - t0
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    net.set_vulkan_device(vkdev)
    net.opt.pipeline_cache = cache
    if a.get("pipeline_threads") is not None:
        net.pipeline_threads = a["pipeline_threads"]
    if net.load_param(a["param"]) != 0:
        raise RuntimeError("load_param failed")
    t0 = time.perf_counter()
    if net.load_model(a["bin"]) != 0:
        raise RuntimeError("load_model failed")
    load_s = time.perf_counter() - t0
    after_load = cache.stats()
    shapes = bench.resolve_shapes(bench.input_specs(net), None, a.get("fallback"))
    inputs = bench.make_inputs(shapes)
    t0 = time.perf_counter()
    ex = net.create_extractor()
    for name, arr in inputs:
        ex.input(name, ncnn.Mat(arr))
    for name in net.output_names():
        ret, out = ex.extract(name)
        if ret != 0:
            raise RuntimeError(f"extract({name!r}) failed")
        np.asarray(out)
    first_s = time.perf_counter() - t0
    st = cache.stats()
    size = None
    if a.get("save"):
        if cache.save_cache(a["save"]) != 0:
            raise RuntimeError("save_cache failed")
        size = os.path.getsize(a["save"])
    return dict(
        loaded=loaded,
        setup_s=setup_s,
        cache_load_s=cache_load_s,
        load_s=load_s,
        first_s=first_s,
        load_compiled=after_load["compiled"],
        load_pipelines=after_load["pipelines_created"],
        compiled=st["compiled"],
        pipelines=st["pipelines_created"],
        cache_bytes=size,
        blob_bytes=st["driver_blob_bytes"],
    )


def child_ncnn(a: dict) -> dict:
    import ncnn
    import numpy as np

    from ncnn_c.tools import bench

    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    if net.load_param(a["param"]) != 0:
        raise RuntimeError("load_param failed")
    t0 = time.perf_counter()
    if net.load_model(a["bin"]) != 0:
        raise RuntimeError("load_model failed")
    load_s = time.perf_counter() - t0
    inputs = bench.make_inputs([(n, tuple(s)) for n, s in a["shapes"]])
    t0 = time.perf_counter()
    ex = net.create_extractor()
    for name, arr in inputs:
        ex.input(name, ncnn.Mat(arr).clone())
    for name in net.output_names():
        ret, out = ex.extract(name)
        if ret != 0:
            raise RuntimeError(f"extract({name!r}) failed")
        np.asarray(out)
    first_s = time.perf_counter() - t0
    del ex
    net.clear()
    return dict(load_s=load_s, first_s=first_s)


def child_main(spec: str) -> int:
    a = json.loads(spec)
    try:
        r = (child_ours if a["lib"] == "ours" else child_ncnn)(a)
    except Exception as e:  # noqa: BLE001 - reported to the parent as a failure
        r = {"error": f"{type(e).__name__}: {e}"}
    print("RESULT " + json.dumps(r), flush=True)
    return 0


# -- the parent ----------------------------------------------------------------------------------


def discover(selected: list[str] | None) -> list[tuple[str, Path, Path | None]]:
    bench_dir = SHARED_DIR if SHARED_DIR.is_dir() else REPO_DIR
    every: list[tuple[str, Path, Path | None]] = [
        (p.stem, p, None) for p in sorted(bench_dir.glob("*.param"))
    ]
    every.append(("squeezenet_v1.1", SQUEEZENET[0], SQUEEZENET[1]))
    if not selected:
        return every
    out: list[tuple[str, Path, Path | None]] = []
    for s in selected:
        hit = [m for m in every if m[0] == s]
        if hit:
            out += hit
        elif Path(s).is_file():
            out.append((Path(s).stem, Path(s), None))
        else:
            raise SystemExit(f"cold_warm: no model {s!r} (names: {', '.join(m[0] for m in every)})")
    return out


def run_child(spec: dict, env: dict, timeout: float) -> dict:
    try:
        res = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in reversed(res.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {res.returncode}: {tail[:200]}"}


def strip_blob(src: Path, dst: Path) -> None:
    """The cache file without its driver blob section, for the no-blob warm start."""
    import ncnn_c as ncnn
    from ncnn_c.gpu import cachefile, compiler
    from ncnn_c.gpu.pipelinecache import NCNN_VERSION
    from ncnn_c.gpu.spirv import resolve_shader_info

    identity = cachefile.identity_of(ncnn.get_gpu_info(0), NCNN_VERSION)
    entries, _blob = cachefile.decode(
        src.read_bytes(), identity, compiler.source_hash_by_id, resolve_shader_info
    )
    dst.write_bytes(cachefile.encode(identity, entries, b""))


def child_env(base: Mapping[str, str], driver_dir: Path | None, driver_cache_off: bool) -> dict:
    env = dict(base)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if driver_cache_off:
        env["MESA_SHADER_CACHE_DISABLE"] = "true"
        env["__GL_SHADER_DISK_CACHE"] = "0"
    elif driver_dir is not None:
        # a fresh driver disk cache for each network and library: cold is cold
        env.pop("MESA_SHADER_CACHE_DISABLE", None)
        env["MESA_SHADER_CACHE_DIR"] = str(driver_dir)
        env["__GL_SHADER_DISK_CACHE"] = "1"
        env["__GL_SHADER_DISK_CACHE_PATH"] = str(driver_dir)
        env["__GL_SHADER_DISK_CACHE_SKIP_CLEANUP"] = "1"
    # our default cache location must not serve a "cold" start
    env["NCNN_C_CACHE_DIR"] = str(driver_dir or tempfile.gettempdir()) + "/ncnn_c_default"
    return env


def measure(models, args) -> list[dict]:
    from ncnn_c.tools.randbin import random_weights

    rows = []
    with tempfile.TemporaryDirectory(prefix="cold_warm_") as tmpdir:
        tmp = Path(tmpdir)
        for name, param, weights in models:
            row: dict = {"name": name}
            rows.append(row)
            binf = weights
            if binf is None:
                binf = tmp / f"{name}.bin"
                try:
                    binf.write_bytes(random_weights(str(param), seed=0))
                except Exception as e:  # noqa: BLE001
                    row["error"] = f"no weights: {type(e).__name__}: {e}"
                    print(f"{name}: {row['error']}", file=sys.stderr)
                    continue
            common = {"param": str(param), "bin": str(binf), "fallback": FALLBACK_SHAPES.get(name)}
            if args.pipeline_threads is not None:
                common["pipeline_threads"] = args.pipeline_threads
            cache_path = tmp / f"{name}.vkcache"
            ours_env = child_env(os.environ, tmp / f"drv-ours-{name}", args.driver_cache_off)
            t0 = time.perf_counter()
            row["cold"] = run_child(
                {**common, "lib": "ours", "save": str(cache_path)}, ours_env, args.timeout
            )
            if "error" not in row["cold"]:
                row["warm"] = run_child(
                    {**common, "lib": "ours", "cache": str(cache_path)}, ours_env, args.timeout
                )
                if args.no_blob:
                    stripped = tmp / f"{name}.noblob.vkcache"
                    strip_blob(cache_path, stripped)
                    # its own driver cache dir: the stripped run must not find the cold run's
                    env = child_env(os.environ, tmp / f"drv-noblob-{name}", args.driver_cache_off)
                    row["noblob"] = run_child(
                        {**common, "lib": "ours", "cache": str(stripped)}, env, args.timeout
                    )
            if not args.no_ncnn:
                shapes = _shapes(param, common["fallback"])
                env = child_env(os.environ, tmp / f"drv-ncnn-{name}", args.driver_cache_off)
                spec = {**common, "lib": "ncnn", "shapes": shapes}
                row["ncnn1"] = run_child(spec, env, args.timeout)
                if "error" not in row["ncnn1"]:
                    row["ncnn2"] = run_child(spec, env, args.timeout)
            _per_pipeline(row)
            print(f"{name}: {time.perf_counter() - t0:.1f} s  {_brief(row)}", file=sys.stderr, flush=True)
    return rows


def _per_pipeline(row: dict) -> None:
    """Issue 6's cost per pipeline: cold load_model time over the pipelines it created."""
    cold = row.get("cold")
    if cold and "error" not in cold and cold.get("load_pipelines"):
        row["cold_load_pipelines"] = cold["load_pipelines"]
        row["cold_ms_per_pipeline"] = 1000.0 * cold["load_s"] / cold["load_pipelines"]


def _shapes(param: Path, fallback) -> list:
    import ncnn_c as ncnn
    from ncnn_c.tools import bench

    net = ncnn.Net()
    net.load_param(str(param))
    return [[n, list(s)] for n, s in bench.resolve_shapes(bench.input_specs(net), None, fallback)]


def _brief(row: dict) -> str:
    parts = []
    for key in ("cold", "warm", "noblob", "ncnn1", "ncnn2"):
        r = row.get(key)
        if r is None:
            continue
        parts.append(f"{key} " + (r["error"] if "error" in r else f"{r['load_s']:.3f}+{r['first_s']:.3f}s"))
    return ", ".join(parts)


def _cell(r: dict | None, what: str = "pair") -> str:
    if r is None:
        return "-"
    if "error" in r:
        return "fails"
    if what == "pair":
        return f"{r['load_s']:.3f} + {r['first_s']:.3f}"
    return str(r.get(what, "-"))


def table(rows: list[dict], no_blob: bool) -> str:
    head = ["network", "cold load + 1st (s)", "warm load + 1st (s)"]
    if no_blob:
        head.append("warm no blob (s)")
    head += [
        "compiled cold/warm",
        "pipelines",
        "load pipelines",
        "cold ms/pipeline",
        "cache KiB",
        "ncnn 1st start (s)",
        "ncnn 2nd start (s)",
        "warm load / ncnn",
    ]
    lines = [head]
    for row in rows:
        if "error" in row:
            lines.append([row["name"], row["error"]] + [""] * (len(head) - 2))
            continue
        cold, warm = row.get("cold") or {}, row.get("warm") or {}
        ok = bool(cold) and "error" not in cold and bool(warm) and "error" not in warm
        n1, n2 = row.get("ncnn1"), row.get("ncnn2")
        cells = [row["name"], _cell(row.get("cold")), _cell(row.get("warm"))]
        if no_blob:
            cells.append(_cell(row.get("noblob")))
        cells.append(f"{cold['compiled']}/{warm['compiled']}" if ok else "-")
        cells.append(str(cold["pipelines"]) if ok else "-")
        cells.append(str(row["cold_load_pipelines"]) if "cold_load_pipelines" in row else "-")
        cells.append(f"{row['cold_ms_per_pipeline']:.1f}" if "cold_ms_per_pipeline" in row else "-")
        cells.append(f"{cold['cache_bytes'] / 1024:.0f}" if ok and cold.get("cache_bytes") else "-")
        cells += [_cell(n1), _cell(n2)]
        ref = n2 if n2 and "error" not in n2 else n1
        if ok and ref and "error" not in ref and ref["load_s"] > 0:
            cells.append(f"{warm['load_s'] / ref['load_s']:.2f}x")
        else:
            cells.append("-")
        lines.append(cells)
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    out = []
    for i, r in enumerate(lines):
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def chart(rows: list[dict], path: str, no_blob: bool, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [("cold", "ncnn_c cold"), ("warm", "ncnn_c warm")]
    if no_blob:
        series.append(("noblob", "ncnn_c warm, no blob"))
    series += [("ncnn1", "ncnn 1st start"), ("ncnn2", "ncnn 2nd start")]
    colors = ["#d62728", "#2ca02c", "#98df8a", "#1f77b4", "#aec7e8"]
    rows = [r for r in rows if "error" not in r]
    names = [r["name"] for r in rows]
    # two panels: load_model and the first inference differ by an order of magnitude on lavapipe
    fig, axes = plt.subplots(1, 2, figsize=(max(10, 1.6 * len(rows) * len(series) / 2.5), 5))
    width = 0.8 / len(series)
    for ax, key_s, ylabel in zip(
        axes, ("load_s", "first_s"), ("load_model (s)", "first inference (s)"), strict=True
    ):
        for k, ((key, label), color) in enumerate(zip(series, colors, strict=False)):
            xs, ys = [], []
            for i, r in enumerate(rows):
                v = r.get(key)
                if v is None or "error" in v:
                    continue
                xs.append(i + (k - (len(series) - 1) / 2) * width)
                ys.append(v[key_s])
            ax.bar(xs, ys, width, color=color, label=label)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right")
        ax.set_ylabel(ylabel)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child_main(argv[1])
    p = argparse.ArgumentParser(
        prog="benchmarks/cold_warm.py",
        description=__doc__.splitlines()[0],
        epilog="exit codes: 0 done, 1 nothing measured, 2 usage",
    )
    p.add_argument("--models", nargs="*", metavar="NAME|PATH", help="networks (default: all, and SqueezeNet)")
    p.add_argument(
        "--driver-cache-off", action="store_true", help="children run with the driver's disk cache off"
    )
    p.add_argument(
        "--no-blob", action="store_true", help="also a warm start from the cache without its driver blob"
    )
    p.add_argument("--no-ncnn", action="store_true", help="skip the PyPI ncnn")
    p.add_argument(
        "--pipeline-threads", type=int, default=None, help="Net.pipeline_threads (default: the heuristic)"
    )
    p.add_argument("--png", default="cold_warm.png", help="the chart (default cold_warm.png; '' for none)")
    p.add_argument("--json", default=None, help="write the raw numbers here")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per child process (default 900)")
    args = p.parse_args(argv)
    if args.timeout <= 0 or (args.pipeline_threads is not None and args.pipeline_threads < 1):
        p.error("--timeout and --pipeline-threads must be positive")
    if not args.no_ncnn:
        try:
            import ncnn  # noqa: F401
        except ImportError:
            print(
                "cold_warm: the PyPI ncnn is not installed (pip install ncnn, or --no-ncnn)", file=sys.stderr
            )
            return 1
    import ncnn_c

    if ncnn_c.get_gpu_count() <= 0:
        print("cold_warm: no Vulkan device", file=sys.stderr)
        return 1
    device = ncnn_c.get_gpu_info(0).device_name()
    rows = measure(discover(args.models), args)
    driver = "driver disk cache off" if args.driver_cache_off else "driver disk cache on (fresh per network)"
    title = f"cold / warm start, {device}, {driver}"
    print(title)
    print(table(rows, args.no_blob))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"device": device, "driver_cache_off": args.driver_cache_off, "rows": rows}, indent=1)
        )
    measured = [r for r in rows if "cold" in r and "error" not in r["cold"]]
    if args.png and measured:
        chart(rows, args.png, args.no_blob, title)
        print(f"chart: {args.png}")
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
