"""``python -m ncnn_c bench``: inference latency of one model, as ncnn's benchncnn measures it.

    python -m ncnn_c bench MODEL.param [MODEL.bin] [--device cpu|vulkan] [--threads N]
                           [--loops N] [--warmup N] [--input WxHxC ...]

Without a .bin every weight is zero (``DataReaderFromEmpty``), which is what benchncnn does:
latency does not depend on the values. Input shapes come from the Input layers' params
unless ``--input`` gives them (once per input, in the order of the Input layers). Each loop
creates an extractor, feeds the inputs and extracts every output blob. Prints min / median /
max in ms on stdout, with the device that ran (``cpu`` when ``--device vulkan`` found no
GPU); a progress line on stderr when the run takes longer than a second and stderr is a
terminal.

``--llm``: MODEL.param is one of ncnn's LLM decoders (``benchmark/models/llm/*_decoder.ncnn.param``,
blobs and protocol as ncnn's ``benchncnn_llm.cpp`` and ``docs/developer-guide/kvcache.md``): a
prefill of ``--prefill`` tokens with an empty kv cache, then ``--decode`` single-token steps,
each fed the kv cache the step before returned; the last position's hidden state goes through
the ``*_proj_out.ncnn.param`` beside the decoder, when there is one, to the logits. Prints
prefill and decode tokens/s (medians over the loops), then the PyPI ``ncnn``'s on the same
files and weights, or a line saying it is not installed. Under each, what a decode step
reads (every weight of the decoder and the head once, at the storage loaded, or 2 bytes a
weight where ncnn_c's CPU plan reads a Gemm's fp16 copy, and the kv cache it was fed) and
so the bytes per second the decode reached, against the memory bandwidth measured on the spot (``ncnn_c.tools.bandwidth``: the CPU's read rate at
``--threads``, or the GPU's device-to-device copy rate).

Exit codes: 0 done, 1 the model failed to load or to run, 2 usage error.

The helpers here (``input_specs``, ``make_inputs``, ``run_once``) take the library module as
an argument, so ``benchmarks/vs_ncnn.py`` times the PyPI ``ncnn`` through the same code.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

EXIT_OK, EXIT_MODEL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line values: exit code 2."""


class ModelError(Exception):
    """The model failed to load or to run: exit code 1."""


def parse_shape(text: str) -> tuple[int, ...]:
    """``"227x227x3"`` -> (227, 227, 3): ncnn order W[xH[xD]xC], 1 to 4 positive sizes."""
    parts = text.lower().replace(",", "x").split("x")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise UsageError(f"--input {text!r}: expected W, WxH, WxHxC or WxHxDxC") from None
    if not 1 <= len(shape) <= 4 or min(shape) <= 0:
        raise UsageError(f"--input {text!r}: expected 1 to 4 positive sizes")
    return shape


def input_specs(net) -> list[tuple[str, tuple[int, ...] | None]]:
    """(blob name, ncnn-order shape or None) of every Input layer of a loaded ncnn_c Net."""
    blobs = net.blobs()
    specs = []
    for layer in net.layers():
        if layer.type != "Input" or not layer.tops:
            continue
        w, h, d, c = (int(getattr(layer, k, 0)) for k in ("w", "h", "d", "c"))
        shape: tuple[int, ...] | None = None
        # as ncnn's Input: the dims follow from which sizes are set (d only with c)
        if w > 0 and h > 0 and c > 0:
            shape = (w, h, d, c) if d > 0 else (w, h, c)
        elif w > 0 and h > 0:
            shape = (w, h)
        elif w > 0:
            shape = (w,)
        specs.append((blobs[layer.tops[0]].name, shape))
    return specs


def resolve_shapes(specs, given: list[tuple[int, ...]] | None, known=None):
    """Input shapes: ``given`` (one per input) or the params, else ``known`` (a fallback shape)."""
    if given:
        if len(given) != len(specs):
            raise UsageError(f"{len(given)} --input shapes given, the model has {len(specs)} inputs")
        return [(name, shape) for (name, _), shape in zip(specs, given, strict=True)]
    out = []
    for name, shape in specs:
        if shape is None:
            shape = known
        if shape is None:
            raise UsageError(f"input {name!r} has no shape in the param file: give it with --input WxHxC")
        out.append((name, shape))
    return out


def make_inputs(shapes, seed: int = 0) -> list[tuple[str, np.ndarray]]:
    """Random float32 data in numpy order (c, [d,] h, w) for each (name, ncnn-order shape)."""
    rng = np.random.default_rng(seed)
    return [(name, rng.uniform(-1, 1, tuple(reversed(shape))).astype(np.float32)) for name, shape in shapes]


def run_once(lib, net, inputs, mats, outputs) -> None:
    """One inference with ``lib``'s API (ncnn_c and the PyPI ncnn share it)."""
    ex = net.create_extractor()
    for (name, _), m in zip(inputs, mats, strict=True):
        ex.input(name, m)
    for name in outputs:
        ret, _out = ex.extract(name)
        if ret != 0:
            raise ModelError(f"extract({name!r}) failed ({ret})")


def lib_mats(lib, inputs):
    # an owned copy: ncnn's in-place layers must not write into (or crash on) numpy memory
    return [lib.Mat(arr).clone() for _, arr in inputs]


class Progress:
    """A self-overwriting progress line on stderr, shown only once a run exceeds a second
    and only on a terminal (``tty``: None asks the stream): a log gets no carriage returns."""

    def __init__(self, total: int, what: str, stream=None, tty: bool | None = None) -> None:
        self.total, self.what = total, what
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty()) if isatty is not None else False
        self.tty = tty
        self.start = time.perf_counter()
        self.last = 0.0
        self.shown = False

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if not self.tty or now - self.start < 1.0 or (now - self.last < 0.5 and done < self.total):
            return
        self.last = now
        self.shown = True
        self.stream.write(f"\r{self.what}: {done}/{self.total} runs, {now - self.start:.1f} s")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def summarize(times_s: list[float]) -> tuple[float, float, float]:
    """(min, median, max) in ms."""
    ms = [t * 1e3 for t in times_s]
    return min(ms), statistics.median(ms), max(ms)


def load_ncnn_c(param: str, model: str | None, device: str, threads: int):
    """A loaded ncnn_c Net (ModelError when it cannot be loaded)."""
    import ncnn_c

    net = ncnn_c.Net()
    net.opt.num_threads = threads
    net.opt.use_vulkan_compute = device == "vulkan"
    if net.load_param(param) != 0:
        raise ModelError(f"cannot load {param} (see the message above)")
    weights = model if model is not None else ncnn_c.DataReaderFromEmpty()
    if net.load_model(weights) != 0:
        raise ModelError(f"cannot load the weights {model or '(zero weights)'} (see the message above)")
    if device == "vulkan" and not ran_on_gpu(net):
        print("bench: no Vulkan device, running on the CPU", file=sys.stderr)
    return net


def ran_on_gpu(net) -> bool:
    """Whether a loaded ncnn_c Net runs on Vulkan (it falls back to the CPU without a GPU)."""
    return bool(net.opt.use_vulkan_compute) and net.vulkan_device() is not None


# (hidden_size, rope_half_dim) of ncnn's benchncnn_llm.cpp models, by file-name prefix; other
# decoders: hidden size from the first RMSNorm, rope half dim half the first Reshape's width
LLM_CONFIGS = {
    "minicpm4_0.5b": (1024, 32),
    "qwen2.5_0.5b": (896, 32),
    "qwen3_0.6b": (1024, 64),
    "hunyuan_0.5b": (1024, 64),
    "tinyllama_1.1b": (2048, 32),
    "llama3.2_1b": (2048, 32),
    "youtu_llm_2b": (2048, 64),
}


class LLMSpec:
    """What feeding an LLM decoder needs, read from its .param text: sizes and the kv-cache
    blob names (each SDPA with 3 outputs: its last two inputs and outputs, in layer order)."""

    def __init__(self, param: str) -> None:
        layers = [line.split() for line in Path(param).read_text().splitlines()[2:] if line.strip()]
        self.cache_in: list[str] = []
        self.cache_out: list[str] = []
        first: dict[str, list[str]] = {}
        for p in layers:
            first.setdefault(p[0], p)
            nin, nout = int(p[2]), int(p[3])
            if p[0] == "SDPA" and nout == 3:
                self.cache_in += p[4 + nin - 2 : 4 + nin]
                self.cache_out += p[4 + nin + 1 : 4 + nin + 3]
        if not self.cache_in:
            raise UsageError(f"{param}: no SDPA with a kv cache: not an LLM decoder")
        known = [v for k, v in LLM_CONFIGS.items() if Path(param).name.startswith(k)]
        if known:
            self.hidden, self.rope_half = known[0]
        else:
            key = {kv.split("=")[0]: kv.split("=")[1] for kv in first["RMSNorm"][6:] if "=" in kv}
            width = {kv.split("=")[0]: kv.split("=")[1] for kv in first["Reshape"][6:] if "=" in kv}
            self.hidden, self.rope_half = int(key["0"]), int(width["0"]) // 2


def llm_inputs(spec: LLMSpec, cur: int, past: int, rng: np.random.Generator) -> list[np.ndarray]:
    """in0..in3 of one step: token embeddings (cur, hidden), the causal mask (cur, past + cur),
    rope cos / sin (cur, rope_half) at positions past.. (theta 1e6; the values do not matter to
    the timing, real ones make the comparison mean something)."""
    from .generate import causal_mask, inv_freq, rope

    emb = rng.standard_normal((cur, spec.hidden)).astype(np.float32)
    cos, sin = rope(past, cur, inv_freq(spec.rope_half, 1e6))
    return [emb, causal_mask(cur, past), cos, sin]


def llm_step(lib, decoder, proj_out, spec: LLMSpec, arrays, cache):
    """One decoder run with ``lib``: (the last position's logits, or its hidden state without
    proj_out, as a 1-D array; the new kv cache). ``cache`` None is the first step: every cache
    input an empty Mat. The cache is extracted raw (type 1), in the backend's own layout."""
    ex = decoder.create_extractor()
    mats = [lib.Mat(a).clone() for a in arrays]  # held until the extracts are done
    for name, m in zip(("in0", "in1", "in2", "in3"), mats, strict=True):
        ex.input(name, m)
    for i, name in enumerate(spec.cache_in):
        ex.input(name, cache[i] if cache is not None else lib.Mat())
    new_cache = []
    for name in spec.cache_out:
        ret, m = ex.extract(name, 1)
        if ret != 0:
            raise ModelError(f"extract({name!r}) failed ({ret})")
        new_cache.append(m)
    ret, hidden = ex.extract("out0")
    if ret != 0:
        raise ModelError(f"extract('out0') failed ({ret})")
    last = np.array(hidden).reshape(-1, spec.hidden)[-1:].copy()
    if proj_out is None:
        return last.reshape(-1), new_cache
    ex2 = proj_out.create_extractor()
    m = lib.Mat(last).clone()
    ex2.input("in0", m)
    ret, logits = ex2.extract("out0")
    if ret != 0:
        raise ModelError(f"proj_out extract('out0') failed ({ret})")
    return np.array(logits).reshape(-1).copy(), new_cache


def llm_generate(lib, decoder, proj_out, spec: LLMSpec, prefill: int, decode: int, seed: int = 0):
    """A prefill of ``prefill`` tokens and ``decode`` single-token steps: (the logits of every
    step, the prefill's seconds, each decode step's seconds, the kv-cache bytes each decode
    step was fed). The inputs depend on ``seed`` only, so two libraries see the same ones."""
    from .bandwidth import mat_bytes  # here: bench's import alone stays light (new_shapes' ncnn child)

    rng = np.random.default_rng(seed)
    outputs: list[np.ndarray] = []
    times: list[float] = []
    cache_bytes: list[int] = []
    cache: list | None = None
    past = 0
    for step in range(1 + decode):
        cur = prefill if step == 0 else 1
        arrays = llm_inputs(spec, cur, past, rng)
        if cache is not None:
            cache_bytes.append(sum(mat_bytes(m) for m in cache))
        t0 = time.perf_counter()
        logits, cache = llm_step(lib, decoder, proj_out, spec, arrays, cache)
        times.append(time.perf_counter() - t0)
        outputs.append(logits)
        past += cur
    return outputs, times[0], times[1:], cache_bytes


def proj_out_path(param: str | Path) -> Path | None:
    """The ``*_proj_out.ncnn.param`` beside a ``*_decoder.ncnn.param``, if there is one."""
    p = Path(param)
    if "_decoder" not in p.name:
        return None
    q = p.with_name(p.name.replace("_decoder", "_proj_out"))
    return q if q.is_file() else None


def _load_fp32(lib, path, weights: str | None, device: str, threads: int):
    """A ``lib`` Net with fp32 storage and arithmetic (zero weights when ``weights`` is None)."""
    net = lib.Net()
    net.opt.num_threads = threads
    net.opt.use_vulkan_compute = device == "vulkan"
    for key in ("use_fp16_packed", "use_fp16_storage", "use_fp16_arithmetic", "use_bf16_storage"):
        setattr(net.opt, key, False)
    if net.load_param(str(path)) != 0:
        raise ModelError(f"cannot load {path}")
    if net.load_model(weights if weights is not None else lib.DataReaderFromEmpty()) != 0:
        raise ModelError(f"cannot load the weights {weights or '(zero weights)'} of {path}")
    return net


def load_llm(lib, param: str, model: str | None, device: str, threads: int):
    """(decoder, proj_out or None) loaded with ``lib`` in fp32; proj_out takes zero weights, or
    the .bin beside the decoder's named like it (``_decoder`` -> ``_proj_out``)."""
    decoder = _load_fp32(lib, param, model, device, threads)
    proj = proj_out_path(param)
    if proj is None:
        return decoder, None
    weights = None
    if model is not None and "_decoder" in Path(model).name:
        guess = Path(model).with_name(Path(model).name.replace("_decoder", "_proj_out"))
        weights = str(guess) if guess.is_file() else None
    return decoder, _load_fp32(lib, proj, weights, device, threads)


def bench_llm_lib(lib, args, spec: LLMSpec, nets=None) -> tuple[float, float, float]:
    """(prefill tokens/s, decode tokens/s, the kv-cache bytes a decode step read on average)
    of ``lib``: medians over ``args.loops`` runs, on ``nets`` (decoder, proj_out) when given."""
    decoder, proj = nets or load_llm(lib, args.param, args.model, args.device, args.threads)
    prefill, decode = [], []
    cache = 0.0
    for i in range(args.warmup + args.loops):
        _, t_prefill, t_decode, cache_bytes = llm_generate(
            lib, decoder, proj, spec, args.prefill, args.decode
        )
        if i >= args.warmup:
            prefill.append(args.prefill / t_prefill)
            decode.append(len(t_decode) / sum(t_decode) if t_decode else 0.0)
            cache = statistics.fmean(cache_bytes) if cache_bytes else 0.0
    return statistics.median(prefill), statistics.median(decode), cache


class _Traffic:
    """What a decode step reads (every weight once, the kv cache) and the device's measured
    memory bandwidth (``tools/bandwidth.py``): the decode's share of it."""

    def __init__(self, args: argparse.Namespace, nets) -> None:
        """``nets``: the (decoder, proj_out) the ncnn_c run used; on a GPU, CPU nets are
        loaded to count (a Vulkan net may give its host copies back after the upload)."""
        import ncnn_c

        from . import bandwidth

        gpu = args.device == "vulkan" and ncnn_c.get_gpu_count() > 0
        decoder, proj = load_llm(ncnn_c, args.param, args.model, "cpu", args.threads) if gpu else nets
        # the CPU plan reads a Gemm's fp16 copy where its weights are fp16 values (an
        # fp16-stored .bin, zero weights); the PyPI ncnn and the GPU read what was loaded
        self.weights = {
            lib: bandwidth.weight_bytes(decoder, fp16) + (bandwidth.weight_bytes(proj, fp16) if proj else 0)
            for lib, fp16 in (("ncnn_c", not gpu), ("ncnn", False))
        }
        vkdev = ncnn_c.get_gpu_device(ncnn_c.get_default_gpu_index()) if gpu else None
        if vkdev is not None:
            self.rate = bandwidth.vulkan_copy_bandwidth(vkdev)
            self.what = f"device copy, {vkdev.info.device_name}"
        else:
            self.rate = bandwidth.cpu_read_bandwidth(args.threads)
            self.what = f"CPU read, {args.threads} threads"

    def line(self, lib: str, decode_per_s: float, cache: float) -> str:
        weights = self.weights[lib]
        total = weights + cache
        achieved = total * decode_per_s
        share = (
            f", {100 * achieved / self.rate:.1f}% of {self.rate / 1e9:.1f} GB/s measured" if self.rate else ""
        )
        return (
            f"decode reads {total / 1e9:.3f} GB a token (weights {weights / 1e9:.3f} GB,"
            f" kv cache {cache / 1e6:.2f} MB): {achieved / 1e9:.2f} GB/s{share} ({self.what})"
        )


def bench_llm(args: argparse.Namespace) -> int:
    """``bench --llm``: prefill and decode tokens/s, ncnn_c's and the PyPI ncnn's."""
    import ncnn_c

    if args.prefill < 1 or args.decode < 0:
        raise UsageError("--prefill must be >= 1, --decode >= 0")
    spec = LLMSpec(args.param)
    name = Path(args.param).name.split(".ncnn")[0]
    what = f"{args.prefill} prefill + {args.decode} decode tokens, {args.loops} loops, {args.threads} threads"
    nets = load_llm(ncnn_c, args.param, args.model, args.device, args.threads)
    pre, dec, cache = bench_llm_lib(ncnn_c, args, spec, nets)
    traffic = _Traffic(args, nets) if args.decode else None
    del nets
    print(
        f"{name}  ncnn_c     prefill = {pre:.2f} tokens/s  decode = {dec:.2f} tokens/s  ({what}, {args.device})"
    )
    if traffic is not None:
        print(f"{name}  ncnn_c     {traffic.line('ncnn_c', dec, cache)}")
    # the PyPI ncnn runs in a child process: ncnn_c never imports it into its own
    ref = _pypi_ncnn_llm(args)
    if ref is None:
        print(f"{name}  PyPI ncnn  not installed (pip install ncnn to compare)")
        return EXIT_OK
    pre, dec, cache = ref
    print(
        f"{name}  PyPI ncnn  prefill = {pre:.2f} tokens/s  decode = {dec:.2f} tokens/s  ({what}, {args.device})"
    )
    if traffic is not None:
        print(f"{name}  PyPI ncnn  {traffic.line('ncnn', dec, cache)}")
    return EXIT_OK


_PYPI_CHILD = """
import argparse, json, sys
try:
    import ncnn
except ImportError:
    print("null"); sys.exit(0)
from ncnn_c.tools.bench import LLMSpec, bench_llm_lib
args = argparse.Namespace(**json.loads(sys.argv[1]))
print(json.dumps(bench_llm_lib(ncnn, args, LLMSpec(args.param))))
"""


def _pypi_ncnn_llm(args: argparse.Namespace) -> tuple[float, float, float] | None:
    """(prefill, decode) tokens/s of the PyPI ncnn and its decode steps' mean kv-cache bytes,
    measured in a child process; None when it is not installed."""
    import json
    import subprocess

    keys = ("param", "model", "device", "threads", "loops", "warmup", "prefill", "decode")
    payload = json.dumps({k: getattr(args, k) for k in keys})
    r = subprocess.run([sys.executable, "-c", _PYPI_CHILD, payload], capture_output=True, text=True)
    if r.returncode != 0:
        raise UsageError(f"the PyPI ncnn failed on {args.param}: {r.stderr.strip().splitlines()[-1:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return None if out is None else (float(out[0]), float(out[1]), float(out[2]))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("param", help="the .param file")
    p.add_argument("model", nargs="?", help="the .bin file (default: zero weights)")
    p.add_argument("--device", choices=("cpu", "vulkan"), default="cpu")
    p.add_argument("--threads", type=int, default=None, help="num_threads (default: every core, as ncnn)")
    p.add_argument("--loops", type=int, default=None, help="timed runs (default 10; 1 with --llm)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs first (default 1)")
    p.add_argument(
        "--input",
        action="append",
        metavar="WxHxC",
        help="input shape, W / WxH / WxHxC / WxHxDxC; once per input (default: the Input params)",
    )
    p.add_argument("--llm", action="store_true", help="an LLM decoder: prefill and decode tokens/s")
    p.add_argument("--prefill", type=int, default=16, help="--llm: prompt tokens (default 16)")
    p.add_argument("--decode", type=int, default=16, help="--llm: decode steps (default 16)")


def bench(args: argparse.Namespace) -> int:
    """The ``bench`` subcommand; returns the exit code."""
    import ncnn_c

    if args.threads is None:
        args.threads = ncnn_c.Option().num_threads
    if args.loops is None:
        args.loops = 1 if args.llm else 10
    if args.loops < 1 or args.warmup < 0 or args.threads < 1:
        raise UsageError("--loops and --threads must be >= 1, --warmup >= 0")
    if not Path(args.param).is_file():
        raise UsageError(f"no such file: {args.param}")
    if args.model is not None and not Path(args.model).is_file():
        raise UsageError(f"no such file: {args.model}")
    if args.llm:
        return bench_llm(args)
    given = [parse_shape(s) for s in args.input] if args.input else None
    net = load_ncnn_c(args.param, args.model, args.device, args.threads)
    device = "vulkan" if ran_on_gpu(net) else "cpu"  # what ran, not what was asked for
    shapes = resolve_shapes(input_specs(net), given)
    inputs = make_inputs(shapes)
    mats = lib_mats(ncnn_c, inputs)
    outputs = net.output_names()
    total = args.warmup + args.loops
    progress = Progress(total, f"bench {Path(args.param).stem}")
    times = []
    try:
        for i in range(total):
            t0 = time.perf_counter()
            run_once(ncnn_c, net, inputs, mats, outputs)
            if i >= args.warmup:
                times.append(time.perf_counter() - t0)
            progress.update(i + 1)
    finally:
        progress.close()
    lo, med, hi = summarize(times)
    shape_text = " ".join("x".join(map(str, s)) for _, s in shapes)
    print(
        f"{Path(args.param).stem}  min = {lo:.2f} ms  median = {med:.2f} ms  max = {hi:.2f} ms"
        f"  ({args.loops} loops, {args.threads} threads, {device}, input {shape_text})"
    )
    return EXIT_OK


def run_command(name: str, command, args: argparse.Namespace) -> int:
    """``command(args)`` with its failures as exit codes and one line on stderr: UsageError
    2, ModelError and any other exception (a crash of the model run) 1."""
    try:
        return command(args)
    except UsageError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ModelError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return EXIT_MODEL
    except Exception as e:  # noqa: BLE001 - any crash of the model run is a model failure
        print(f"{name}: the model failed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_MODEL


def run(args: argparse.Namespace) -> int:
    """Entry point of the subcommand: maps failures to exit codes."""
    return run_command("bench", bench, args)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ncnn_c bench", description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
