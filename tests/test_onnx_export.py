"""benchmarks/ncnn_to_onnx.py: ONNX Runtime on the converted graph against the PyPI ncnn.

ONNX Runtime is the second reference of ``benchmarks/vs_onnxruntime.py``, which means
something only if the ONNX graph computes what the ncnn model computes. So every benchmark
network (``models/benchmark``, ``models/benchmark_cpu``; random weights from
``ncnn_c.tools.randbin``, seed 7) and SqueezeNet v1.1 with its real weights is converted and
run by ONNX Runtime (one thread, default optimizations) and by the PyPI ncnn (the oracle's fp32
CPU options) on the same input: every output within relative L2 1e-4. Networks with a
detection layer are converted up to it (``heads=True``) and compared on its inputs. One-layer
models cover the forms the networks do not reach (pad modes and output sizes of Pooling,
ncnn's broadcasting, the fused activations, ...), and a layer type without a converter must be
refused by name.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from oracle import make_bin, make_param, rel_l2, run_ncnn

from ncnn_c.tools.randbin import random_weights

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import ncnn_to_onnx  # noqa: E402 - benchmarks/ is not a package

TOL = 1e-4
DETECTION_TYPES = ncnn_to_onnx.DETECTION_TYPES
# input shapes (numpy order) where the .param gives none, as ncnn's benchncnn feeds them
INPUT_SHAPES = {"FastestDet": {"in0": (3, 352, 352)}}
# hundreds of MB of weights: converted and compared in the slow run
HEAVY = {"vgg16", "alexnet"}
NETWORKS = sorted(
    [f"benchmark/{p.stem}" for p in (ROOT / "models" / "benchmark").glob("*.param")]
    + [f"benchmark_cpu/{p.stem}" for p in (ROOT / "models" / "benchmark_cpu").glob("*.param")]
)


def ort_run(model, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The model's outputs from ONNX Runtime, one thread, the batch axis dropped."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feed = {i.name: a[None] for i, a in zip(model.graph.input, arrays, strict=True)}
    return [o[0] for o in sess.run([o.name for o in model.graph.output], feed)]


def compare(param: pathlib.Path, bin_bytes: bytes, shapes=None, heads: bool = False) -> float:
    """Largest relative L2 error over the outputs of ONNX Runtime vs the PyPI ncnn."""
    model = ncnn_to_onnx.convert(param, bin_bytes, shapes, heads=heads)
    ins = [(i.name, tuple(d.dim_value for d in i.type.tensor_type.shape.dim)[1:]) for i in model.graph.input]
    outs = [o.name for o in model.graph.output]
    g = np.random.default_rng(0)
    arrays = [g.standard_normal(s).astype(np.float32) for _, s in ins]
    got = ort_run(model, arrays)
    # run_ncnn feeds ncnn.Mat(a).clone(): a Mat over numpy memory crashes an in-place layer
    ret, ref = run_ncnn(param.read_text(), bin_bytes, arrays, len(outs), [n for n, _ in ins], outs)
    assert ret == 0, f"the PyPI ncnn failed on {param.name}"
    worst = 0.0
    for name, a, b in zip(outs, got, ref, strict=True):
        # random weights must give a live signal, or agreement proves nothing
        assert np.all(np.isfinite(b)) and (b.size == 1 or np.std(b.astype(np.float64)) > 0), (
            f"{param.stem}:{name}: dead output"
        )
        err = rel_l2(a, b)
        assert err <= TOL, f"{param.stem}:{name}: relative L2 error {err:.3g} > {TOL:g}"
        worst = max(worst, err)
    return worst


def _network(name: str):
    return pytest.param(name, marks=pytest.mark.slow) if pathlib.Path(name).name in HEAVY else name


@pytest.mark.parametrize("name", [_network(n) for n in NETWORKS])
def test_network_matches_ncnn(name):
    param = ROOT / "models" / f"{name}.param"
    shapes = INPUT_SHAPES.get(param.stem)
    calib = next(iter(shapes.values())) if shapes else (3, 224, 224)
    heads = any(
        line.split()[:1] and line.split()[0] in DETECTION_TYPES for line in param.read_text().split("\n")
    )
    compare(param, random_weights(str(param), seed=7, input_shape=calib), shapes, heads=heads)


def test_squeezenet_real_weights():
    param = ROOT / "models" / "squeezenet_v1.1.param"
    compare(param, (ROOT / "models" / "squeezenet_v1.1.bin").read_bytes())


# -- one-layer models -------------------------------------------------------------------------
def _w(g, *shape, scale=0.3):
    return (g.standard_normal(shape) * scale).astype(np.float32)


def _conv(t, g, inch, outch, k, params, group=1, deconv=False):
    """A Convolution-family case: weights, then a bias (type 1)."""
    n = outch * (inch // group) * k * k
    p = {0: outch, 1: k, 5: 1, 6: n, **params}
    if group > 1:
        p[7] = group
    return (t, p, [_w(g, n), (_w(g, outch), 1)], [(inch, 9, 8)])


def _cases():
    g = np.random.default_rng(3)
    x3 = [(4, 8, 8)]
    cases = {
        # ncnn's "full" pad mode: 8x8, k3 s2 -> 4x4 (ONNX floor would give 3x3)
        "pool max full": ("Pooling", {0: 0, 1: 3, 2: 2, 5: 0}, [], x3),
        # its tail reaches the kernel size: an explicit Pad, not MaxPool pads
        "pool max full tail": ("Pooling", {0: 0, 1: 2, 2: 2, 3: 1, 5: 0}, [], [(3, 5, 5)]),
        "pool avg full exclude": ("Pooling", {0: 1, 1: 3, 2: 2, 3: 1, 5: 0}, [], [(3, 7, 9)]),
        "pool avg full include": ("Pooling", {0: 1, 1: 3, 2: 2, 3: 1, 5: 0, 6: 1}, [], [(3, 8, 8)]),
        "pool avg valid": ("Pooling", {0: 1, 1: 3, 2: 2, 3: 1, 5: 1}, [], [(3, 8, 9)]),
        "pool avg same upper": ("Pooling", {0: 1, 1: 3, 2: 2, 5: 2}, [], [(3, 8, 7)]),
        "pool max same lower": ("Pooling", {0: 0, 1: 3, 2: 2, 5: 3}, [], [(3, 8, 7)]),
        "pool rect": ("Pooling", {0: 0, 1: 3, 11: 2, 2: 1, 12: 2, 5: 1}, [], x3),
        "pool global avg": ("Pooling", {0: 1, 4: 1}, [], x3),
        "pool global max": ("Pooling", {0: 0, 4: 1}, [], x3),
        "pool adaptive": ("Pooling", {0: 1, 7: 1, 8: 2, 18: 4}, [], x3),
        "conv same leaky": _conv("Convolution", g, 4, 6, 3, {3: 2, 4: -233, 9: 2, 10: [0.1]}),
        "conv pad value clip": _conv("Convolution", g, 4, 6, 3, {4: 1, 18: 0.5, 9: 3, 10: [-0.5, 0.5]}),
        "conv dilation sigmoid": _conv("Convolution", g, 4, 5, 3, {2: 2, 4: 2, 9: 4}),
        "conv mish": _conv("Convolution", g, 4, 5, 1, {9: 5}),
        "conv hardswish": _conv("Convolution", g, 4, 5, 3, {4: -234, 3: 2, 9: 6, 10: [0.2, 0.5]}),
        "conv asym pads": _conv("Convolution", g, 4, 5, 3, {4: 0, 15: 2, 14: 1, 16: 0}),
        "convdw": _conv("ConvolutionDepthWise", g, 4, 8, 3, {4: 1, 9: 1}, group=4),
        "deconv": _conv("Deconvolution", g, 4, 3, 4, {3: 2, 4: 1, 18: 1}),
        "deconvdw": _conv("DeconvolutionDepthWise", g, 4, 4, 3, {3: 2, 4: 0, 9: 1}, group=4),
        "innerproduct 3d": (
            "InnerProduct",
            {0: 7, 1: 1, 2: 7 * 256, 9: 1},
            [_w(g, 7 * 256), (_w(g, 7), 1)],
            x3,
        ),
        "innerproduct rows": ("InnerProduct", {0: 5, 1: 1, 2: 40}, [_w(g, 40), (_w(g, 5), 1)], [(3, 8)]),
        "binary channel vector": ("BinaryOp", {0: 0}, [], [(4, 5, 6), (4,)]),
        "binary outer 2d": ("BinaryOp", {0: 2}, [], [(4, 5, 6), (4, 5)]),
        "binary inner vector": ("BinaryOp", {0: 1}, [], [(5, 6), (6,)]),
        "binary explicit": ("BinaryOp", {0: 4}, [], [(4, 5, 6), (1, 5, 1)]),
        "binary rdiv scalar": ("BinaryOp", {0: 8, 1: 1, 2: 2.5}, [], [(4, 5, 6)]),
        # (no pow: ncnn's pow_ps is exp(b * log(a)), 2.4e38 at a = 0 and NaN below, ONNX's is C's pow)
        "binary min scalar": ("BinaryOp", {0: 5, 1: 1, 2: 0.2}, [], [(4, 5, 6)]),
        "binary rsub": ("BinaryOp", {0: 7}, [], [(4, 5, 6), (4, 5, 6)]),
        "eltwise sum coeffs": ("Eltwise", {0: 1, 1: [0.5, -2.0, 1.0]}, [], [(3, 4, 5)] * 3),
        "eltwise prod": ("Eltwise", {0: 0}, [], [(3, 4, 5)] * 3),
        "eltwise max": ("Eltwise", {0: 2}, [], [(3, 4, 5)] * 2),
        "softmax axis 1": ("Softmax", {0: 1, 1: 1}, [], [(3, 4, 5)]),
        "softmax last": ("Softmax", {0: -1, 1: 1}, [], [(4, 5)]),
        "reduction sumsq": ("Reduction", {0: 2, 1: 0, 3: [0], 4: 0, 5: 1}, [], [(3, 4, 5)]),
        "reduction l2 keep": ("Reduction", {0: 8, 1: 0, 3: [1, 2], 4: 1, 5: 1, 2: 0.5}, [], [(3, 4, 5)]),
        "reduction logsumexp": ("Reduction", {0: 10, 1: 0, 3: [-1], 5: 1}, [], [(3, 4, 5)]),
        "reduction mean all": ("Reduction", {0: 3}, [], [(3, 4, 5)]),
        "reduction max": ("Reduction", {0: 4, 1: 0, 3: [1], 4: 1, 5: 1}, [], [(3, 4, 5)]),
        "reduction asum": ("Reduction", {0: 1, 1: 0, 3: [0, 2], 5: 1}, [], [(3, 4, 5)]),
        "shufflechannel reverse": ("ShuffleChannel", {0: 3, 1: 1}, [], [(6, 4, 5)]),
        "crop offsets": ("Crop", {0: 1, 1: 2, 2: 1, 3: 3, 4: 4, 5: 2}, [], [(4, 8, 8)]),
        "crop numpy": ("Crop", {9: [1, -5], 10: [-1, -233], 11: [0, 2]}, [], [(4, 8, 8)]),
        "slice indices": ("Slice", {2: [1, 3], 1: 1}, [], [(4, 6, 5)], 3),
        "slice shares": ("Slice", {0: [-233, -233], 1: -1}, [], [(4, 6, 6)], 2),
        "padding edge": ("Padding", {0: 1, 1: 2, 2: 0, 3: 3, 4: 1}, [], [(3, 5, 6)]),
        "padding reflect": ("Padding", {0: 2, 1: 1, 2: 1, 3: 2, 4: 2}, [], [(3, 5, 6)]),
        "padding channels": ("Padding", {0: 1, 7: 2, 8: 1, 5: 0.25}, [], [(3, 5, 6)]),
        "interp bilinear": ("Interp", {0: 2, 1: 2.0, 2: 2.0}, [], [(3, 5, 6)]),
        "interp bilinear align": ("Interp", {0: 2, 3: 9, 4: 7, 6: 1}, [], [(3, 5, 6)]),
        "interp bicubic": ("Interp", {0: 3, 3: 11, 4: 13}, [], [(3, 5, 6)]),
        "interp nearest": ("Interp", {0: 1, 1: 3.0, 2: 2.0}, [], [(3, 5, 6)]),
        "interp down": ("Interp", {0: 2, 1: 0.5, 2: 0.5}, [], [(3, 8, 8)]),
        "lrn across": ("LRN", {0: 0, 1: 3, 2: 0.5, 3: 0.75, 4: 2.0}, [], [(6, 4, 5)]),
        "lrn within": ("LRN", {0: 1, 1: 3, 2: 0.5, 3: 0.75, 4: 1.0}, [], [(3, 5, 6)]),
        "batchnorm": (
            "BatchNorm",
            {0: 4, 1: 1e-5},
            [(_w(g, 4), 1), (_w(g, 4), 1), (np.abs(_w(g, 4)) + 0.5, 1), (_w(g, 4), 1)],
            x3,
        ),
        "scale bias": ("Scale", {0: 4, 1: 1}, [(_w(g, 4), 1), (_w(g, 4), 1)], x3),
        "prelu": ("PReLU", {0: 4}, [(_w(g, 4), 1)], x3),
        "relu leaky": ("ReLU", {0: 0.1}, [], x3),
        "clip": ("Clip", {0: -0.3, 1: 0.6}, [], x3),
        "elu": ("ELU", {0: 0.7}, [], x3),
        "hardsigmoid": ("HardSigmoid", {0: 0.3, 1: 0.4}, [], x3),
        "hardswish": ("HardSwish", {0: 0.2, 1: 0.5}, [], x3),
        "swish": ("Swish", {}, [], x3),
        "mish": ("Mish", {}, [], x3),
        "tanh": ("TanH", {}, [], x3),
        "absval": ("AbsVal", {}, [], x3),
        "sigmoid": ("Sigmoid", {}, [], x3),
        "dropout scale": ("Dropout", {0: 0.5}, [], x3),
        "reshape": ("Reshape", {0: -1, 1: 16}, [], x3),
        "flatten": ("Flatten", {}, [], x3),
        "concat channels": ("Concat", {0: 0}, [], [(2, 4, 5), (3, 4, 5)]),
        "concat width": ("Concat", {0: -1}, [], [(2, 4, 5), (2, 4, 3)]),
    }
    for order in range(1, 6):
        cases[f"permute {order}"] = ("Permute", {0: order}, [], [(3, 4, 5)])
    cases["permute 2d"] = ("Permute", {0: 1}, [], [(4, 5)])
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", list(CASES))
def test_layer_form_matches_ncnn(case, tmp_path):
    layer_type, params, weights, shapes, *n_out = CASES[case]
    param = tmp_path / "m.param"
    param.write_text(make_param(layer_type, params, shapes, n_out[0] if n_out else 1))
    compare(param, make_bin(weights))


def test_output_sizes_are_ncnn_s_not_onnx_ceil_mode(tmp_path):
    # ONNX's ceil_mode drops a last window that starts in the padding; ncnn's full mode keeps it
    param = tmp_path / "m.param"
    param.write_text(make_param("Pooling", {0: 0, 1: 2, 2: 2, 3: 1, 5: 0}, [(3, 5, 5)]))
    model = ncnn_to_onnx.convert(param, b"")
    dims = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 4, 4]


def test_unsupported_layer_type_is_named(tmp_path):
    param = tmp_path / "m.param"
    param.write_text(make_param("Tile", {0: 0, 1: 2}, [(3, 4, 5)]))
    with pytest.raises(ncnn_to_onnx.UnsupportedLayer, match="'Tile'"):
        ncnn_to_onnx.convert(param)
    with pytest.raises(ncnn_to_onnx.UnsupportedLayer, match="'DetectionOutput'.*--heads"):
        ncnn_to_onnx.convert(ROOT / "models" / "benchmark" / "mobilenet_ssd.param")


def test_command_writes_a_loadable_model(tmp_path):
    out = tmp_path / "sq.onnx"
    param, weights = ROOT / "models" / "squeezenet_v1.1.param", ROOT / "models" / "squeezenet_v1.1.bin"
    script = ROOT / "benchmarks" / "ncnn_to_onnx.py"
    r = subprocess.run(
        [sys.executable, str(script), str(param), str(weights), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    onnx.checker.check_model(onnx.load(str(out)))
    r = subprocess.run(
        [
            sys.executable,
            str(script),
            str(ROOT / "models" / "benchmark" / "yolov4-tiny.param"),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "Yolov3DetectionOutput" in r.stderr


def test_vs_onnxruntime_prints_a_table():
    # benchmarks/vs_onnxruntime.py end to end on one model: a row with both medians and the ratio
    cmd = [sys.executable, str(ROOT / "benchmarks" / "vs_onnxruntime.py"), "--models", "squeezenet_v1.1"]
    cmd += ["--threads", "1", "--loops", "2", "--warmup", "0"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "1 threads" in r.stdout and "load average (1/5/15 min) before" in r.stdout
    (row,) = [line.split() for line in r.stdout.splitlines() if line.startswith("squeezenet_v1.1 ")]
    assert len(row) == 4 and row[3].endswith("x") and float(row[1]) > 0 and float(row[2]) > 0
