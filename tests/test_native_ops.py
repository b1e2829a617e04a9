"""Each native form of a layer in the CPU plan (ncnn_c/net/native/), one small network at a
time: the plan must run it natively (no numpy segment unless the case is one that stays
numpy), agree with the numpy layers it replaces and with the PyPI ncnn.

A network here is an Input, optionally a convolution in front (so that the layer sees
oneDNN's blocked channel layouts, not only the plain layout of an input Mat), and the layer
under test; random weights from ncnn_c.tools.randbin. Strict mode is on: a plan that differs
from the numpy path fails its test instead of falling back.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import pytest
from oracle import assert_close, run_ncnn

import ncnn_c
from ncnn_c._native import dnnl
from ncnn_c.net import native
from ncnn_c.net.native.ops import shape as shape_ops
from ncnn_c.tools.randbin import random_weights

# oneDNN's CPU wheels exist for x86-64 only: elsewhere the plan is off by design (the numpy
# layers run); on x86-64 a missing plan is a broken install and these tests fail
pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="no oneDNN wheel for this architecture"
)


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("NCNN_C_NATIVE_STRICT", "1")


@pytest.fixture(params=[None, "aBcd16b", "aBcd8b", "acdb", "abcd"])
def layout(request, monkeypatch):
    """Convolutions write this layout (None: the one oneDNN picks on this machine), so that
    the layers after them meet every layout some machine gives them."""
    tag = request.param
    if tag is not None:
        dn = dnnl.get()
        make = dn.convolution

        def convolution(src, weights, bias, dst, *args):
            if len(weights.dims) == 5:  # grouped: oneDNN's kernels take the layout they take
                return make(src, weights, bias, dst, *args)
            return make(src, weights, bias, dn.md(dst.dims, tag), *args)

        monkeypatch.setattr(dn, "convolution", convolution)
    return tag


def conv(name: str, bottom: str, top: str, cin: int, cout: int, k: int = 1, extra: str = "") -> str:
    return (
        f"Convolution {name} 1 1 {bottom} {top} 0={cout} 1={k} 4={k // 2} 5=1 6={cout * cin * k * k} {extra}"
    )


def _param(lines: list[str]) -> str:
    blobs: set[str] = set()
    for line in lines:
        tok = line.split()
        nb, nt = int(tok[2]), int(tok[3])
        blobs.update(tok[4 : 4 + nb + nt])
    return "\n".join(["7767517", f"{len(lines)} {len(blobs)}", *lines]) + "\n"


def check(
    tmp_path: Path,
    lines: list[str],
    inputs: dict[str, tuple[int, ...]],
    outputs: list[str],
    numpy_layers: int = 0,
    positive: bool = False,
    threads: int = 1,
    tol: float = 1e-4,
    fp16_weights: bool = False,
):
    """Run the network twice (numpy, then the plan); compare; return the plan. With
    ``fp16_weights`` the .bin stores its weights in fp16 (randbin --fp16)."""
    text = _param(lines)
    path = tmp_path / "m.param"
    path.write_text(text)
    first_shape = next(iter(inputs.values()))
    weights = random_weights(
        str(path), seed=7, input_shape=first_shape if len(first_shape) == 3 else (3, 8, 8), fp16=fp16_weights
    )
    g = np.random.default_rng(3)
    arrays = [g.standard_normal(s).astype(np.float32) for s in inputs.values()]
    if positive:
        arrays = [np.abs(a) + np.float32(0.25) for a in arrays]
    net = ncnn_c.Net()
    net.opt.num_threads = threads
    assert net.load_param_mem(text) == 0 and net.load_model_mem(weights) == 0

    def run() -> list[np.ndarray]:
        ex = net.create_extractor()
        for name, a in zip(inputs, arrays, strict=True):
            assert ex.input(name, ncnn_c.Mat(a)) == 0
        outs = []
        for name in outputs:
            ret, m = ex.extract(name)
            assert ret == 0
            outs.append(np.array(m.numpy(), copy=True))
        return outs

    numpy_result = run()
    plans = [p for ps in net._native.plans._plans.values() for p in ps]
    assert len(plans) == 1, "no plan was built"
    plan = plans[0]
    numpy_segments = [plan.layers[s.layer].type for s in plan.segments if s.layer >= 0]
    assert len(numpy_segments) == numpy_layers, f"numpy layers in the plan: {numpy_segments}"
    got = run()
    for g_out, n_out in zip(got, numpy_result, strict=True):
        assert g_out.shape == n_out.shape
        assert_close(g_out, n_out, 1e-5, "plan vs numpy layers")
    ret, ref = run_ncnn(text, weights, arrays, len(outputs), list(inputs), outputs)
    assert ret == 0
    for g_out, r_out in zip(got, ref, strict=True):
        assert_close(g_out, r_out.reshape(g_out.shape), tol, "plan vs PyPI ncnn")
    return plan


IN = "Input in 0 1 data 0={w} 1={h} 2={c}"


def _in(c: int, h: int, w: int) -> str:
    return IN.format(w=w, h=h, c=c)


def _front(shape: tuple[int, int, int], cout: int) -> tuple[list[str], str]:
    """An Input of ``shape`` and, with ``cout``, a 1x1 convolution to ``cout`` channels after
    it: (the lines, the blob the layer under test reads)."""
    if not cout:
        return [_in(*shape)], "data"
    return [_in(*shape), conv("c", "data", "a", shape[0], cout)], "a"


# -- data movement --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cin, cout, params",
    [
        (12, 0, "0=3"),  # plain layout (the input Mat): a strided copy
        (12, 0, "0=3 1=1"),
        (3, 48, "0=2"),  # blocked layout: oneDNN's shuffle
        (3, 116, "0=2"),  # blocked with padded channels
        (3, 60, "0=3 1=1"),
    ],
)
def test_shufflechannel(tmp_path, layout, cin, cout, params):
    lines, src = _front((cin, 9, 7), cout)
    lines.append(f"ShuffleChannel s 1 1 {src} out {params}")
    check(tmp_path, lines, {"data": (cin, 9, 7)}, ["out"])


@pytest.mark.parametrize(
    "cout, params, shape",
    [
        (116, "-23300=2,-233,-233 1=0", (3, 6, 5)),  # unaligned channel halves (58)
        (48, "-23300=2,16,-233 1=0", (3, 6, 5)),  # block-aligned: views
        (0, "-23300=3,2,-233,-233 1=0", (8, 6, 5)),  # the plain input: views
        (0, "-23300=3,2,-233,-233 1=1", (8, 6, 5)),  # rows
        (24, "-23300=3,1,-233,-233 1=2", (3, 6, 7)),  # columns
        (40, "2=-24,32 1=0", (3, 6, 5)),  # split points
    ],
)
def test_slice(tmp_path, layout, cout, params, shape):
    lines, src = _front(shape, cout)
    n = 3 if "-23300=3" in params or "2=-24" in params else 2
    tops = [f"o{i}" for i in range(n)]
    lines.append(f"Slice s 1 {n} {src} {' '.join(tops)} {params}")
    check(tmp_path, lines, {"data": shape}, tops)


@pytest.mark.parametrize(
    "cout, params",
    [
        (116, "-23309=1,58 -23310=1,116 -23311=1,0"),  # nanodet's channel halves
        (116, "-23309=1,0 -23310=1,58 -23311=1,0"),
        (32, "2=16 3=10 4=10 5=16"),  # yolov4-tiny's coffset / outc
        (16, "0=1 1=2 3=5 4=6 5=-233"),  # a spatial box
        (16, "-23309=3,1,2,-4 -23310=3,-1,7,-233"),  # numpy-style starts / ends on every axis
        (0, "-23309=1,3 -23310=1,7 -23311=1,0"),  # the plain input: a view
    ],
)
def test_crop(tmp_path, layout, cout, params):
    shape = (8, 10, 10)
    lines, src = _front(shape, cout)
    lines.append(f"Crop cr 1 1 {src} out {params}")
    check(tmp_path, lines, {"data": shape}, ["out"])


def test_padding_channels_into_a_residual_add(tmp_path, layout):
    # BlazeFace's block: the shortcut grows by zero channels to meet the wider branch
    lines = [
        _in(3, 12, 12),
        conv("c0", "data", "a", 3, 24),
        "Split sp 1 2 a a0 a1",
        conv("c1", "a0", "b", 24, 28),
        "Padding p 1 1 a1 pa 0=0 1=0 2=0 3=0 4=0 5=0.0 7=0 8=4",
        "BinaryOp add 2 1 b pa out 0=0",
    ]
    check(tmp_path, lines, {"data": (3, 12, 12)}, ["out"])


def test_zero_padding_folds_into_the_next_convolution(tmp_path):
    lines = [
        _in(8, 11, 11),
        "Padding p 1 1 data pa 0=1 1=2 2=1 3=2 4=0 5=0.0",
        "ConvolutionDepthWise dw 1 1 pa out 0=8 1=3 3=2 4=0 5=1 6=72 7=8",
    ]
    plan = check(tmp_path, lines, {"data": (8, 11, 11)}, ["out"])
    # the input's import, the convolution, the export: no padding primitive
    assert len(plan.segments[0].steps) == 3


@pytest.mark.parametrize(
    "params",
    [
        "0=1 1=1 2=2 3=0 4=0 5=1.5",  # spatial, a non-zero value
        "0=0 1=0 2=0 3=0 4=0 5=-0.5 7=2 8=3",  # channels front and behind
        "0=2 1=0 2=0 3=1 4=0 5=0.0",  # zero, but nobody folds it (it is the output)
    ],
)
def test_padding_constant(tmp_path, layout, params):
    lines = [_in(3, 7, 6), conv("c", "data", "a", 3, 16), f"Padding p 1 1 a out {params}"]
    check(tmp_path, lines, {"data": (3, 7, 6)}, ["out"])


def test_padding_replicate_stays_numpy(tmp_path):
    lines = [_in(3, 7, 6), conv("c", "data", "a", 3, 16), "Padding p 1 1 a out 0=1 1=1 2=1 3=1 4=1"]
    check(tmp_path, lines, {"data": (3, 7, 6)}, ["out"], numpy_layers=1)


@pytest.mark.parametrize(
    "params, shape, numpy_layers",
    [
        ("0=1 1=2.0 2=2.0", (16, 10, 10), 0),  # nearest x2
        ("0=2 1=2.0 2=2.0", (16, 10, 10), 0),  # bilinear x2
        ("0=2 1=5.000000e-01 2=5.000000e-01", (16, 20, 20), 0),  # FastestDet's halving
        ("0=1 1=3.0 2=2.0", (16, 5, 7), 0),
        ("0=2 1=2.0 2=2.0 6=1", (16, 10, 10), 1),  # align_corner: ncnn's own positions
        ("0=3 1=2.0 2=2.0", (16, 10, 10), 1),  # bicubic: no oneDNN form
    ],
)
def test_interp(tmp_path, layout, params, shape, numpy_layers):
    lines = [_in(3, shape[1], shape[2]), conv("c", "data", "a", 3, shape[0]), f"Interp up 1 1 a out {params}"]
    check(tmp_path, lines, {"data": (3, shape[1], shape[2])}, ["out"], numpy_layers=numpy_layers)


@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("cout", [0, 24])
def test_permute_3d(tmp_path, layout, order, cout):
    shape = (6, 5, 4)
    lines, src = _front(shape, cout)
    lines.append(f"Permute p 1 1 {src} out 0={order}")
    check(tmp_path, lines, {"data": shape}, ["out"])


def test_permute_2d_after_reshape(tmp_path):
    lines = [
        _in(3, 5, 4),
        conv("c", "data", "a", 3, 16),
        "Reshape r 1 1 a b 0=-1 1=16",
        "Permute p 1 1 b out 0=1",
    ]
    check(tmp_path, lines, {"data": (3, 5, 4)}, ["out"])


@pytest.mark.parametrize(
    "layer",
    [
        "Flatten f 1 1 a out",
        "Reshape r 1 1 a out 0=-1 1=16",
        "Reshape r 1 1 a out 0=4 1=10 2=-1",
        "Reshape r 1 1 a out 0=20 1=-1",
    ],
)
def test_reshape_and_flatten_of_a_blocked_blob(tmp_path, layout, layer):
    lines = [_in(3, 5, 4), conv("c", "data", "a", 3, 16), layer]
    check(tmp_path, lines, {"data": (3, 5, 4)}, ["out"])


def test_ssd_head_permute_flatten_concat_reshape_softmax(tmp_path, layout):
    lines = [
        _in(3, 6, 6),
        conv("c0", "data", "f", 3, 16),
        "Split sp 1 2 f f0 f1",
        conv("c1", "f0", "l1", 16, 12, 3),
        "Permute p1 1 1 l1 l1p 0=3",
        "Flatten fl1 1 1 l1p l1f",
        "Pooling pool 1 1 f1 g 0=0 1=2 2=2",
        conv("c2", "g", "l2", 16, 12, 3),
        "Permute p2 1 1 l2 l2p 0=3",
        "Flatten fl2 1 1 l2p l2f",
        "Concat cat 2 1 l1f l2f cf 0=0",
        "Reshape r 1 1 cf rs 0=3 1=-1",
        "Softmax sm 1 1 rs out 0=1 1=1",
    ]
    check(tmp_path, lines, {"data": (3, 6, 6)}, ["out"])


# -- per-channel affine layers ------------------------------------------------------------------
def test_batchnorm_scale_bias_fold_into_the_convolution(tmp_path):
    lines = [
        _in(3, 7, 6),
        conv("c", "data", "a", 3, 16, 3),
        "BatchNorm bn 1 1 a b 0=16 1=1e-5",
        "Scale sc 1 1 b s 0=16 1=1",
        "Bias bi 1 1 s t 0=16",
        "ReLU r 1 1 t out",
    ]
    plan = check(tmp_path, lines, {"data": (3, 7, 6)}, ["out"])
    assert plan.native_layers == 5
    # import, convolution (the affine layers folded in), its ReLU (a pass that keeps a NaN,
    # eltwise.relu_step), export
    assert len(plan.segments[0].steps) == 4


def test_batchnorm_folds_into_an_inner_product(tmp_path):
    lines = [
        _in(24, 1, 1),
        "InnerProduct ip 1 1 data a 0=10 1=1 2=240",
        "BatchNorm bn 1 1 a out 0=10",
    ]
    plan = check(tmp_path, lines, {"data": (24, 1, 1)}, ["out"])
    assert len(plan.segments[0].steps) == 3


@pytest.mark.parametrize(
    "layer",
    ["BatchNorm bn 1 1 cat out 0=32", "Scale sc 1 1 cat out 0=32 1=1", "Scale sc 1 1 cat out 0=32 1=0"]
    + ["Bias bi 1 1 cat out 0=32", "PReLU pr 1 1 cat out 0=32", "PReLU pr 1 1 cat out 0=1"],
)
def test_per_channel_layers_on_their_own(tmp_path, layout, layer):
    # after a concat nothing can take them in
    lines = [
        _in(3, 7, 6),
        "Split sp 1 2 data d0 d1",
        conv("c1", "d0", "a", 3, 16),
        conv("c2", "d1", "b", 3, 16),
        "Concat cat 2 1 a b cat",
        layer,
    ]
    check(tmp_path, lines, {"data": (3, 7, 6)}, ["out"])


@pytest.mark.parametrize("layer", ["BatchNorm bn 1 1 data out 0=5", "PReLU pr 1 1 data out 0=5"])
def test_per_channel_layers_on_the_plain_input(tmp_path, layer):
    check(tmp_path, [_in(5, 4, 3), layer], {"data": (5, 4, 3)}, ["out"])


# -- elementwise ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "layer, positive",
    [
        ("ELU e 1 1 a out 0=0.3", False),
        ("HardSigmoid h 1 1 a out 0=0.2 1=0.5", False),
        ("Exp e 1 1 a out 0=-1.0 1=0.5 2=0.1", False),
        ("Log l 1 1 a out 0=-1.0 1=1.0 2=0.0", True),
        ("Log l 1 1 a out 0=10.0 1=2.0 2=0.5", True),
        ("Power p 1 1 a out 0=2.0 1=0.5 2=3.0", False),
        ("Power p 1 1 a out 0=0.5 1=1.0 2=0.0", True),
        ("UnaryOp u 1 1 a out 0=0", False),
        ("UnaryOp u 1 1 a out 0=1", False),
        ("UnaryOp u 1 1 a out 0=4", False),
        ("UnaryOp u 1 1 a out 0=5", True),
        ("UnaryOp u 1 1 a out 0=6", True),
        ("UnaryOp u 1 1 a out 0=7", False),
        ("UnaryOp u 1 1 a out 0=8", True),
        ("UnaryOp u 1 1 a out 0=15", True),
        ("UnaryOp u 1 1 a out 0=16", False),
        ("BinaryOp b 1 1 a out 0=6 1=1 2=2.0", True),  # the PyPI ncnn's pow of x < 0 is junk
        ("BinaryOp b 1 1 a out 0=7 1=1 2=0.5", False),
    ],
)
def test_elementwise(tmp_path, layer, positive):
    # straight on the input (positive where the function needs it) and after a convolution,
    # which takes the layer in as a post-op
    check(
        tmp_path,
        [_in(16, 5, 4), layer.replace(" a ", " data ")],
        {"data": (16, 5, 4)},
        ["out"],
        positive=positive,
    )
    if not positive:
        lines = [_in(3, 5, 4), conv("c", "data", "a", 3, 16), layer]
        plan = check(tmp_path, lines, {"data": (3, 5, 4)}, ["out"])
        assert len(plan.segments[0].steps) == 3


def test_unary_round_halves_to_even(tmp_path):
    text = _param([_in(1, 1, 8), "UnaryOp u 1 1 data out 0=18"])
    net = ncnn_c.Net()
    assert net.load_param_mem(text) == 0 and net.load_model_mem(b"") == 0
    x = np.array([[[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997]]], np.float32)
    for _ in range(2):
        ex = net.create_extractor()
        ex.input("data", ncnn_c.Mat(x))
        ret, out = ex.extract("out")
        assert ret == 0
        assert np.array_equal(np.array(out).reshape(-1), np.rint(x).reshape(-1))
    assert len(net._native.plans) == 1


# -- deconvolution ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "layer, numpy_layers",
    [
        ("Deconvolution d 1 1 a out 0=4 1=4 3=2 4=1 5=1 6=512", 0),
        ("Deconvolution d 1 1 a out 0=6 1=3 3=1 4=0 5=1 6=432 9=1", 0),
        ("Deconvolution d 1 1 a out 0=4 1=3 2=2 3=2 4=1 5=0 6=288", 0),  # dilation
        ("Deconvolution d 1 1 a out 0=4 1=3 3=2 4=1 18=1 5=1 6=288", 0),  # output_pad inside the crop
        ("Deconvolution d 1 1 a out 0=4 1=3 3=2 4=0 18=1 5=1 6=288", 1),  # output_pad past it
        ("Deconvolution d 1 1 a out 0=4 1=3 3=2 4=-233 20=10 21=12 5=1 6=288", 0),  # output size
        ("DeconvolutionDepthWise d 1 1 a out 0=8 1=4 3=2 4=1 5=1 6=128 7=8", 0),
        ("DeconvolutionDepthWise d 1 1 a out 0=8 1=1 3=2 5=1 6=8 7=8", 0),  # mobilenetv2_yolov3's
        ("DeconvolutionDepthWise d 1 1 a out 0=8 1=3 3=2 4=1 5=1 6=288 7=2", 0),  # two groups
    ],
)
def test_deconvolution(tmp_path, layer, numpy_layers):
    lines = [_in(3, 6, 5), conv("c", "data", "a", 3, 8), layer]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"], numpy_layers=numpy_layers)


def test_deconvolution_takes_batchnorm_and_activation(tmp_path):
    lines = [
        _in(3, 6, 5),
        conv("c", "data", "a", 3, 8),
        "Deconvolution d 1 1 a b 0=4 1=4 3=2 4=1 5=1 6=512",
        "BatchNorm bn 1 1 b c 0=4",
        "Sigmoid s 1 1 c out",
    ]
    plan = check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"])
    assert len(plan.segments[0].steps) == 4  # import, convolution, deconvolution, export


# -- broadcasting binary ops, reductions, constants ---------------------------------------------
SE = [
    _in(3, 6, 5),
    conv("c", "data", "x", 3, 24),
    "Split sp 1 2 x x0 x1",
    "Reduction r 1 1 x1 m 0=3 1=0 -23303=2,1,2 4=1 5=1",
    conv("c2", "m", "g", 24, 24, extra="9=4"),
]


@pytest.mark.parametrize("op", [0, 1, 2, 3, 4, 5, 7])
def test_binaryop_per_channel_gate(tmp_path, layout, op):
    # EfficientNet's squeeze-excite: (c, h, w) op (c, 1, 1)
    lines = [*SE, f"BinaryOp b 2 1 x0 g out 0={op}"]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"])


@pytest.mark.parametrize("op, numpy_layers", [(0, 0), (1, 0), (2, 0), (3, 1), (7, 0), (8, 0)])
def test_binaryop_broadcast_first_input(tmp_path, layout, op, numpy_layers):
    # the broadcast operand first: swapped, with sub negated; a / x has no form
    lines = [*SE, f"BinaryOp b 2 1 g x0 out 0={op}"]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"], numpy_layers=numpy_layers)


@pytest.mark.parametrize(
    "mem, op, numpy_layers",
    [
        ("0=24", 0, 0),  # 1-D per channel (EfficientNet's constants)
        ("0=24", 1, 0),
        ("0=6 1=24", 2, 1),  # 2-D (c, h) against (c, h, w): along w only oneDNN has no kernel
        ("0=5", 2, 0),  # 1-D of w's length: along w
        ("0=5 1=6 2=1", 0, 0),  # (1, h, w)
    ],
)
def test_binaryop_with_memorydata(tmp_path, layout, mem, op, numpy_layers):
    lines = [
        _in(3, 6, 5),
        "MemoryData md 0 1 k " + mem,
        conv("c", "data", "x", 3, 24),
        f"BinaryOp b 2 1 x k out 0={op}",
    ]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"], numpy_layers=numpy_layers)


@pytest.mark.parametrize(
    "params, numpy_layers",
    [
        ("0=3 1=0 -23303=2,1,2 4=1 5=1", 0),  # mean over each plane, kept dims
        ("0=3 1=0 -23303=2,1,2 4=0 5=1", 0),  # the same as a 1-D blob
        ("0=4 1=0 -23303=2,1,2 4=1 5=1", 0),  # max
        ("0=0 1=1", 0),  # sum of everything
        ("0=3 1=0 -23303=1,2 4=1 5=1", 0),  # mean along w
        ("0=4 1=0 -23303=1,0 4=1 5=1", 1),  # max over channels: oneDNN's reference code only
        ("0=3 1=0 -23303=2,1,2 2=2.0 4=1 5=1", 1),  # a coefficient
    ],
)
def test_reduction(tmp_path, layout, params, numpy_layers):
    lines = [_in(3, 6, 5), conv("c", "data", "x", 3, 24), f"Reduction r 1 1 x out {params}"]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"], numpy_layers=numpy_layers)


@pytest.mark.parametrize(
    "layer, extra",
    [
        ("Softmax s 1 1 x out 0=0", []),
        ("Softmax s 1 1 x out 0=1 1=1", []),
        ("Softmax s 1 1 x out 0=2 1=1", []),
        ("Softmax s 1 1 y out 0=0", ["Reshape r 1 1 x y 0=-1 1=24"]),
        ("Softmax s 1 1 y out 0=1 1=1", ["Reshape r 1 1 x y 0=-1 1=24"]),
    ],
)
def test_softmax_axes(tmp_path, layout, layer, extra):
    lines = [_in(3, 6, 5), conv("c", "data", "x", 3, 24), *extra, layer]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat_axes(tmp_path, layout, axis):
    lines = [
        _in(3, 6, 5),
        "Split sp 1 2 data d0 d1",
        conv("c1", "d0", "a", 3, 16),
        conv("c2", "d1", "b", 3, 16),
        f"Concat cat 2 1 a b out 0={axis}",
    ]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"])


@pytest.mark.parametrize("params, numpy_layers", [("0=0 1=5 2=0.0001 3=0.75 4=1", 0), ("0=1 1=3 2=0.5", 0)])
def test_lrn(tmp_path, layout, params, numpy_layers):
    lines = [_in(3, 9, 9), conv("c", "data", "x", 3, 32), f"LRN n 1 1 x out {params}"]
    check(tmp_path, lines, {"data": (3, 9, 9)}, ["out"], numpy_layers=numpy_layers)


def test_priorbox_is_a_constant_of_the_plan(tmp_path):
    lines = [
        _in(3, 32, 32),
        "Split sp0 1 3 data d0 d1 d2",
        conv("c1", "d0", "f1", 3, 8, 3, "3=4"),
        "Split sp1 1 2 f1 f1a f1b",
        conv("c2", "f1a", "f2", 8, 8, 3, "3=2"),
        "Split sp 1 2 f2 f2a f2b",
        "PriorBox pb1 2 1 f1b d1 p1 -23300=1,8.0 -23301=1,16.0 -23302=1,2.0 9=-233 10=-233 13=0.5",
        "PriorBox pb2 2 1 f2a d2 p2 -23300=1,16.0 -23301=1,30.0 -23302=1,2.0 9=-233 10=-233 13=0.5",
        "Concat cat 2 1 p1 p2 out 0=1",
        "Pooling gp 1 1 f2b g 0=1 4=1",
    ]
    plan = check(tmp_path, lines, {"data": (3, 32, 32)}, ["out", "g"])
    assert plan.native_layers == 9 and len(plan.segments) == 1


def test_eltwise_product_max_and_weighted_sum(tmp_path, layout):
    lines = [
        _in(3, 6, 5),
        "Split sp 1 3 data d0 d1 d2",
        conv("c1", "d0", "a", 3, 16),
        conv("c2", "d1", "b", 3, 16),
        conv("c3", "d2", "c", 3, 16),
        "Split s1 1 3 a a0 a1 a2",
        "Split s2 1 3 b b0 b1 b2",
        "Split s3 1 3 c c0 c1 c2",
        "Eltwise prod 3 1 a0 b0 c0 o0 0=0",
        "Eltwise max 3 1 a1 b1 c1 o1 0=2",
        "Eltwise sum 3 1 a2 b2 c2 o2 0=1 -23301=3,0.5,-1.5,2.0",
    ]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["o0", "o1", "o2"])


def test_noop_passes_several_blobs(tmp_path):
    lines = [
        _in(3, 6, 5),
        "Split sp 1 2 data d0 d1",
        conv("c1", "d0", "a", 3, 16),
        conv("c2", "d1", "b", 3, 8),
        "Noop n 2 1 a b out",
    ]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"])


@pytest.mark.parametrize("threads", [1, 2])
def test_a_shufflenet_block_is_one_segment(tmp_path, layout, threads):
    lines = [
        _in(3, 10, 10),
        conv("c0", "data", "x", 3, 116),
        "Split sp 1 2 x x0 x1",
        "Crop l 1 1 x0 left -23309=1,0 -23310=1,58 -23311=1,0",
        "Crop r 1 1 x1 right -23309=1,58 -23310=1,116 -23311=1,0",
        conv("c1", "right", "r1", 58, 58),
        "ConvolutionDepthWise dw 1 1 r1 r2 0=58 1=3 4=1 5=1 6=522 7=58",
        conv("c2", "r2", "r3", 58, 58, extra="9=1"),
        "Concat cat 2 1 left r3 cat 0=0",
        "ShuffleChannel sh 1 1 cat out 0=2",
    ]
    plan = check(tmp_path, lines, {"data": (3, 10, 10)}, ["out"], threads=threads)
    assert len(plan.segments) == 1 and plan.native_layers == 9


# -- fusions ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "add", ["BinaryOp add 2 1 a b s 0=0", "Eltwise add 2 1 a b s 0=1", "Eltwise add 2 1 b a s 0=1"]
)
def test_a_residual_add_and_its_activation_go_into_the_later_convolution(tmp_path, layout, add):
    lines = [
        _in(3, 7, 6),
        "Split sp 1 2 data d0 d1",
        conv("c1", "d0", "a", 3, 32, 3),
        conv("c2", "d1", "b", 3, 32, extra="9=2 -23310=1,0.1"),  # with an activation of its own
        add,
        "ReLU r 1 1 s out",
    ]
    plan = check(tmp_path, lines, {"data": (3, 7, 6)}, ["out"])
    # c1 cannot take the add (b does not exist yet when it runs); c2 takes the add and the ReLU:
    # the input's import (and a copy in the other layout the second convolution takes), c1,
    # c2 with the add as a post-op, its ReLU (a pass that keeps a NaN, eltwise.relu_step),
    # the export
    assert plan.native_layers == 5 and len(plan.segments[0].steps) <= 6 + (layout == "acdb")


def test_a_residual_add_reads_a_numpy_layers_result(tmp_path):
    lines = [
        _in(16, 7, 6),
        "Split sp 1 2 data d0 d1",
        "UnaryOp fl 1 1 d0 f 0=2",  # floor: numpy
        conv("c", "d1", "b", 16, 16),
        "BinaryOp add 2 1 b f out 0=0",
    ]
    check(tmp_path, lines, {"data": (16, 7, 6)}, ["out"], numpy_layers=1)


def test_a_binary_op_takes_the_activation_after_it(tmp_path, layout):
    lines = [
        _in(3, 8, 8),
        conv("c", "data", "x", 3, 16),
        "Split sp 1 2 x x0 x1",
        "Pooling mp 1 1 x0 p 0=0 1=3 3=1",
        "Pooling ap 1 1 x1 q 0=1 1=3 3=1",
        "BinaryOp mul 2 1 p q s 0=2",
        "Sigmoid sg 1 1 s out",
    ]
    plan = check(tmp_path, lines, {"data": (3, 8, 8)}, ["out"])
    assert plan.native_layers == 6 and len(plan.segments[0].steps) <= 6


def test_a_gemm_deconvolution_keeps_its_post_ops_apart(tmp_path):
    # mobilenet_yolo's upsampling: groups of 2 inputs and 1 output, which oneDNN runs by
    # GEMM, with post-ops in a slow loop: activation and add run as primitives of their own
    lines = [
        _in(3, 6, 5),
        "Split sp 1 2 data d0 d1",
        "Interp up 1 1 d1 u 0=1 1=2.0 2=2.0",
        conv("c2", "u", "r", 3, 8),
        conv("c", "d0", "a", 3, 16),
        "DeconvolutionDepthWise d 1 1 a b 0=8 1=4 3=2 4=1 5=1 6=256 7=8 9=2 -23310=1,0.1",
        "Eltwise add 2 1 r b out 0=1",
    ]
    plan = check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"])
    assert plan.native_layers == 6


SHUFFLED_CONCAT = [
    _in(3, 6, 5),
    "Split sp 1 3 data d0 d1 d2",
    conv("c1", "d0", "a", 3, 8),
    conv("c2", "d1", "b", 3, 16),
    conv("c3", "d2", "c", 3, 8),
    "Concat cat 3 1 a b c cat 0=0",
]


@pytest.mark.parametrize("params, fused", [("0=4", True), ("0=8 1=1", True), ("0=2", False)])
def test_a_concat_is_written_straight_into_its_shuffle(tmp_path, monkeypatch, layout, params, fused):
    # with 2 groups of 16 channels the 8-channel parts hold no whole group: a concat first
    concats = []
    make = shape_ops.concat

    def concat(plan, layer, seg, opt, chain):
        concats.append(layer.name)
        return make(plan, layer, seg, opt, chain)

    # the registry's builder, and the one a deferred Concat is made with
    monkeypatch.setitem(native.BUILDERS, "Concat", concat)
    monkeypatch.setattr(shape_ops, "concat", concat)
    lines = [*SHUFFLED_CONCAT, f"ShuffleChannel sh 1 1 cat out {params}"]
    plan = check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"])
    assert plan.native_layers == 6 and (concats == []) == fused


def test_a_pending_concat_is_made_when_its_shuffle_cannot_take_it(tmp_path, monkeypatch):
    def refuse(*args):
        raise native.Unsupported("refused by the test")

    monkeypatch.setattr(shape_ops, "shuffle_parts", refuse)
    lines = [*SHUFFLED_CONCAT, "ShuffleChannel sh 1 1 cat out 0=4"]
    check(tmp_path, lines, {"data": (3, 6, 5)}, ["out"], numpy_layers=1)
