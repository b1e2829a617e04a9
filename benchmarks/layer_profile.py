"""Where a network's time goes, layer by layer, in ncnn_c against the PyPI ncnn.

Runs the network in ncnn_c with each layer's forward timed inside the executor (so the
per-layer Python cost is included), records every layer's input shapes, then times each
layer alone in the PyPI ncnn as a one-layer network (Input layers of those shapes, the
layer's own param line, zero weights) with the same options (fp32, no packing, same
threads). Prints the layers by time lost against ncnn and the totals per layer type.
Inside the network a layer finds its weights and input out of cache, alone it does not:
``--warm`` times our layers alone as well, for a like-for-like comparison.

    python benchmarks/layer_profile.py MODEL [--threads 2] [--repeat 7] [--top 25] [--warm]

MODEL is a benchmark name (``shufflenet``) or a .param path. Unset OPENBLAS_CORETYPE /
OPENBLAS_L2_SIZE for this command if the environment sets them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS_DIR = Path("/work/shared/models/benchmark")
FP32_FLAGS = dict(
    use_vulkan_compute=False,
    use_fp16_packed=False,
    use_fp16_storage=False,
    use_fp16_arithmetic=False,
    use_packing_layout=False,
    use_bf16_storage=False,
)


def model_path(name: str) -> Path:
    p = Path(name)
    if p.is_file():
        return p
    return MODELS_DIR / f"{name}.param"


def param_lines(path: Path) -> dict[str, list[str]]:
    """Layer name -> the tokens of its line."""
    lines = path.read_text().splitlines()[2:]
    out = {}
    for line in lines:
        parts = line.split()
        if len(parts) >= 4:
            out[parts[1]] = parts
    return out


def profile_ours(param: Path, shape, threads: int, repeat: int):
    """(per-layer best-of-repeat seconds, per-layer input shapes in ncnn order, total median seconds)."""
    import ncnn_c
    from ncnn_c.net.reference import ReferenceExecutor

    net = ncnn_c.Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    net.opt.num_threads = threads
    net.load_param(str(param))
    net.load_model(ncnn_c.DataReaderFromEmpty())
    from ncnn_c.tools.bench import input_specs, resolve_shapes

    specs = resolve_shapes(input_specs(net), None, shape)
    inputs = [(n, np.random.default_rng(0).standard_normal(s[::-1]).astype(np.float32)) for n, s in specs]
    times: dict[int, list[float]] = defaultdict(list)
    shapes: dict[int, list[tuple[int, ...]]] = {}
    orig = ReferenceExecutor.forward

    def timed(self, state, li, layer, opt, light):
        if li not in shapes:
            sh = []
            for b in layer.bottoms:
                m = state.mats[b]
                sh.append(tuple(m.tensor().shape[::-1]) if m is not None else ())
            shapes[li] = sh
        t = time.perf_counter()
        r = orig(self, state, li, layer, opt, light)
        times[li].append(time.perf_counter() - t)
        return r

    outs = net.output_names()
    total = []
    ReferenceExecutor.forward = timed
    try:
        for i in range(repeat + 1):
            t = time.perf_counter()
            ex = net.create_extractor()
            for n, a in inputs:
                ex.input(n, ncnn_c.Mat.from_tensor(a))
            for o in outs:
                ex.extract(o)
            if i:
                total.append(time.perf_counter() - t)
            else:
                times.clear()
    finally:
        ReferenceExecutor.forward = orig
    layers = net.layers()
    med = {li: min(v) for li, v in times.items()}
    return layers, med, shapes, statistics.median(total)


def time_one_layer(lib, tokens: list[str], shapes, threads: int, repeat: int) -> float | None:
    """Best time of the layer alone in a one-layer net of ``lib`` (ncnn or ncnn_c), warm."""
    nb, nt = int(tokens[2]), int(tokens[3])
    bottoms = tokens[4 : 4 + nb]
    tops = tokens[4 + nb : 4 + nb + nt]
    lines = []
    for b, s in zip(bottoms, shapes, strict=False):
        keys = ["0", "1", "2"] if len(s) != 4 else ["0", "1", "11", "2"]
        lines.append(f"Input in_{b} 0 1 {b} " + " ".join(f"{k}={v}" for k, v in zip(keys, s, strict=False)))
    lines.append(" ".join(tokens))
    text = f"7767517\n{len(lines)} {nb + nt}\n" + "\n".join(lines) + "\n"
    net = lib.Net()
    for k, v in FP32_FLAGS.items():
        setattr(net.opt, k, v)
    net.opt.num_threads = threads
    with tempfile.TemporaryDirectory() as tmp:
        pp = os.path.join(tmp, "m.param")
        with open(pp, "w") as f:
            f.write(text)
        if net.load_param(pp) != 0:
            return None
    net.load_model(lib.DataReaderFromEmpty())
    arrays = [np.random.default_rng(1).standard_normal(s[::-1]).astype(np.float32) for s in shapes]
    mats = [lib.Mat(a).clone() for a in arrays]
    best = []
    for i in range(repeat + 1):
        ex = net.create_extractor()
        for b, m in zip(bottoms, mats, strict=False):
            ex.input(b, m)
        t = time.perf_counter()
        for o in tops:
            ex.extract(o)
        if i:
            best.append(time.perf_counter() - t)
        del ex
    return min(best)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--shape", default=None, help="WxHxC when the Input layer has none")
    ap.add_argument(
        "--warm",
        action="store_true",
        help="time our layers as one-layer nets too (as ncnn's are), instead of inside the network",
    )
    args = ap.parse_args(argv)
    param = model_path(args.model)
    shape = tuple(int(v) for v in args.shape.split("x")) if args.shape else None
    layers, med, shapes, total = profile_ours(param, shape, args.threads, args.repeat)
    tokens = param_lines(param)
    import ncnn

    import ncnn_c

    rows = []
    for li, t in med.items():
        layer = layers[li]
        tn = time_one_layer(ncnn, tokens[layer.name], shapes[li], args.threads, args.repeat)
        if args.warm:
            t = time_one_layer(ncnn_c, tokens[layer.name], shapes[li], args.threads, args.repeat) or t
        rows.append((layer.type, layer.name, shapes[li], t, tn))
    ours_sum = sum(r[3] for r in rows)
    ncnn_sum = sum(r[4] or 0 for r in rows)
    print(
        f"{param.stem}: ours {total * 1e3:.2f} ms whole net, {ours_sum * 1e3:.2f} ms in layers; "
        f"ncnn one-layer nets sum {ncnn_sum * 1e3:.2f} ms"
    )
    print(f"{'type':22s} {'n':>4s} {'ours ms':>9s} {'ncnn ms':>9s} {'lost ms':>8s}")
    by_type: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for typ, _, _, t, tn in rows:
        e = by_type[typ]
        e[0] += 1
        e[1] += t
        e[2] += tn or 0.0
    for typ, (n, t, tn) in sorted(by_type.items(), key=lambda kv: kv[1][2] - kv[1][1]):
        print(f"{typ:22s} {n:4d} {t * 1e3:9.3f} {tn * 1e3:9.3f} {(t - tn) * 1e3:8.3f}")
    print()
    print(f"{'layer':52s} {'in shape':24s} {'ours ms':>8s} {'ncnn ms':>8s} {'ratio':>6s}")
    rows.sort(key=lambda r: -(r[3] - (r[4] or 0)))
    for typ, name, sh, t, tn in rows[: args.top]:
        ratio = f"{t / tn:6.2f}" if tn else "     -"
        s = " ".join("x".join(map(str, x)) for x in sh)
        print(f"{(typ + ' ' + name)[:52]:52s} {s[:24]:24s} {t * 1e3:8.3f} {(tn or 0) * 1e3:8.3f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
