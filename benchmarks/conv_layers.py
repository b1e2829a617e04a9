"""Per-layer latency of our Convolution / ConvolutionDepthWise against the PyPI ncnn.

Every distinct convolution of the benchmark networks (shapes taken from the ``-23330`` shape
hints of /work/shared/models/benchmark/*.param) runs as a one-layer network in the PyPI ncnn
(CPU, fp32, 2 threads) and as our layer object; both get random weights. Prints the best of
``--repeat`` runs in ms, the ratio ours / ncnn, and per-network totals weighted by how often
each shape occurs.

    python benchmarks/conv_layers.py [--models mobilenet resnet50 ...] [--repeat 5] [--check]

Unset OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE for this command if the environment sets them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections import Counter

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, ".."))

from oracle import make_bin, make_param  # noqa: E402

MODELS_DIR = "/work/shared/models/benchmark"
DEFAULT_MODELS = ["mobilenet", "resnet50", "vgg16", "squeezenet", "shufflenet", "mobilenetv2_yolov3"]
TYPES = ("Convolution", "ConvolutionDepthWise")


def _parse_params(tokens):
    params = {}
    for tok in tokens:
        k, _, v = tok.partition("=")
        k = int(k)
        if k <= -23300:
            continue
        params[k] = float(v) if re.search(r"[.eE]", v) else int(v)
    return params


def conv_shapes(model: str, models_dir: str = MODELS_DIR) -> Counter:
    """Counter of (type, sorted params, input shape (c, h, w)) for one network."""
    shapes: dict[str, tuple[int, ...]] = {}
    found: Counter = Counter()
    with open(os.path.join(models_dir, model + ".param")) as f:
        lines = f.read().splitlines()[2:]
    for line in lines:
        parts = line.split()
        if len(parts) < 4:
            continue
        typ, nb, nt = parts[0], int(parts[2]), int(parts[3])
        bottoms = parts[4 : 4 + nb]
        tops = parts[4 + nb : 4 + nb + nt]
        rest = parts[4 + nb + nt :]
        hints = [t for t in rest if t.startswith("-23330=")]
        if hints:
            vals = [int(v) for v in hints[0].split("=")[1].split(",")][1:]  # first is the count
            for i, top in enumerate(tops):
                dims = vals[4 * i]
                w, h, c = vals[4 * i + 1 : 4 * i + 4]
                shapes[top] = (c, h, w) if dims == 3 else (w,) if dims == 1 else (h, w)
        if typ in TYPES and bottoms and bottoms[0] in shapes and len(shapes[bottoms[0]]) == 3:
            p = _parse_params(rest)
            found[(typ, tuple(sorted(p.items())), shapes[bottoms[0]])] += 1
    return found


def make_case(typ, params, shape, seed=0):
    g = np.random.default_rng(seed)
    p = dict(params)
    weights = [(g.standard_normal(p[6]).astype(np.float32) * 0.1, 0)]
    if p.get(5, 0):
        weights.append((g.standard_normal(p[0]).astype(np.float32), 1))
    x = g.standard_normal(shape).astype(np.float32)
    return p, weights, x


def time_ncnn(typ, p, weights, x, repeat):
    import ncnn

    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    for k in ("use_fp16_packed", "use_fp16_storage", "use_fp16_arithmetic", "use_bf16_storage"):
        setattr(net.opt, k, False)
    net.opt.use_packing_layout = True
    net.opt.num_threads = 2
    with tempfile.TemporaryDirectory() as tmp:
        pp, bp = os.path.join(tmp, "m.param"), os.path.join(tmp, "m.bin")
        with open(pp, "w") as f:
            f.write(make_param(typ, p, [x.shape]))
        with open(bp, "wb") as f:
            f.write(make_bin(weights))
        net.load_param(pp)
        net.load_model(bp)
    mat = ncnn.Mat(x).clone()
    best = 1e9
    out = None
    for _ in range(repeat + 1):
        with net.create_extractor() as ex:
            ex.input("in0", mat)
            t = time.perf_counter()
            ret, m = ex.extract("out0")
            best = min(best, time.perf_counter() - t)
            out = np.array(m, copy=True)
            del m
    net.clear()
    return best, out


def time_ours(typ, p, weights, x, repeat):
    from oracle import _weight_values

    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.modelbin import ModelBinFromMatArray
    from ncnn_c.option import Option
    from ncnn_c.paramdict import ParamDict

    opt = Option()
    opt.num_threads = 2
    opt.use_vulkan_compute = False
    layer = create_layer_cpu(typ)
    pd = ParamDict()
    for k, v in p.items():
        pd.set(k, v)
    assert layer.load_param(pd) == 0
    assert layer.load_model(ModelBinFromMatArray([Mat(_weight_values(w)) for w in weights])) == 0
    assert layer.create_pipeline(opt) == 0
    bottom = Mat(x)
    best = 1e9
    top = Mat()
    for _ in range(repeat + 1):
        top = Mat()
        t = time.perf_counter()
        assert layer.forward(bottom, top, opt) == 0
        best = min(best, time.perf_counter() - t)
    return best, np.array(top.numpy(), copy=True)


def describe(typ, params, shape):
    p = dict(params)
    k = (p.get(1, 0), p.get(11, p.get(1, 0)))
    s = p.get(3, 1)
    tag = "dw" if typ == "ConvolutionDepthWise" else "conv"
    g = f" g{p.get(7, 1)}" if tag == "dw" else ""
    return f"{tag}{g} {shape[0]}x{shape[1]}x{shape[2]} -> {p[0]} k{k[0]}x{k[1]} s{s}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    ap.add_argument("--models-dir", default=MODELS_DIR)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="also print the relative L2 error")
    ap.add_argument(
        "--settle",
        type=float,
        default=0.3,
        help="seconds to sleep before each measurement: the other library's idle threads spin a while",
    )
    args = ap.parse_args(argv)

    per_model = {m: conv_shapes(m, args.models_dir) for m in args.models}
    cases = sorted({c for cnt in per_model.values() for c in cnt}, key=lambda c: (c[0], c[2], c[1]))
    results = {}
    print(f"{'layer':52s} {'ours ms':>9s} {'ncnn ms':>9s} {'ratio':>6s}" + ("   err" if args.check else ""))
    for case in cases:
        typ, params, shape = case
        p, weights, x = make_case(typ, params, shape)
        time.sleep(args.settle)
        tn, ref = time_ncnn(typ, p, weights, x, args.repeat)
        time.sleep(args.settle)
        to, got = time_ours(typ, p, weights, x, args.repeat)
        results[case] = (to, tn)
        line = f"{describe(typ, params, shape):52s} {to * 1e3:9.3f} {tn * 1e3:9.3f} {to / tn:6.2f}"
        if args.check:
            err = np.linalg.norm(got.astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-30)
            line += f"  {err:.1e}"
        print(line, flush=True)
    print()
    print(f"{'network (conv layers only)':30s} {'ours ms':>9s} {'ncnn ms':>9s} {'ratio':>6s}")
    for m, cnt in per_model.items():
        to = sum(results[c][0] * n for c, n in cnt.items())
        tn = sum(results[c][1] * n for c, n in cnt.items())
        print(f"{m:30s} {to * 1e3:9.2f} {tn * 1e3:9.2f} {to / tn:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
