"""Convolution against the PyPI ncnn oracle: every param key, padding form and activation,
the im2col / 1x1 / Winograd F(4,3) paths (native transforms and their numpy fallback),
dynamic weights, ncnn's flat 1x1 form, and bad inputs; one geometry list run on every backend
(oracle.backends: the CPU, and the GPU option grid), then what only the GPU form has (tiles,
packing transitions, the implicit-GEMM shader, pipeline sharing).

Winograd results differ from ncnn's own (also transformed) arithmetic by up to ~4e-6
relative L2 on 512-channel inputs; every case stays under the 1e-5 bound.
"""

from __future__ import annotations

import itertools
import logging
import time

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import pytest
from oracle import (
    FP32_FLAGS,
    GPU_GRID,
    SPOT_GRID,
    _apply,
    assert_close,
    backends,
    check,
    check_layer,
    check_layer_gpu,
    default_option,
    make_bin,
    make_param,
    randn,
    rel_l2,
    rng,
    run_layer,
    run_ncnn,
    run_net_gpu,
)

TOL = 1e-5


def conv_case(params, c, h, w, bias=True, scale=1.0, seed=0, backend="cpu", **kw):
    g = rng("conv", sorted(params.items()), c, h, w, bias, seed)
    kwid = params[1]
    kh = params.get(11, kwid)
    n = params[0]
    weight = randn(g, (n, c, kh, kwid), 1.0 / np.sqrt(c * kh * kwid))
    p = dict(params)
    p[5] = int(bias)
    p[6] = weight.size
    weights = [(weight, 0)]
    if bias:
        weights.append((randn(g, (n,)), 1))
    x = randn(g, (c, h, w), scale)
    return check(backend, "Convolution", p, weights, [x], tol=TOL, **kw)


@pytest.fixture
def numpy_only(monkeypatch):
    """Run without the native kernels: the numpy fallbacks must give the same results."""
    import ncnn_c._native.cpu as cpu

    monkeypatch.setattr(cpu, "_kernels", None)
    monkeypatch.setattr(cpu, "_tried", True)


CONV_GEOMETRY = [
    # (params without num_output/bias/size, c, h, w)
    ({1: 1}, 5, 7, 9),  # 1x1 stride 1: plain matmul
    ({1: 1, 3: 2}, 6, 9, 11),  # 1x1 strided
    ({1: 3}, 3, 10, 13),
    ({1: 3, 4: 1}, 4, 9, 7),  # symmetric pad
    ({1: 3, 3: 2, 4: 1}, 3, 15, 17),
    ({1: 3, 2: 2, 4: 2}, 5, 11, 12),  # dilation
    ({1: 5, 11: 3, 3: 2, 13: 1}, 3, 12, 14),  # rectangular kernel and stride
    ({1: 3, 11: 2, 2: 2, 12: 3, 3: 3, 13: 2}, 4, 13, 15),  # everything per axis
    ({1: 3, 4: 1, 15: 2, 14: 0, 16: 3}, 3, 8, 9),  # four different pads
    ({1: 3, 4: 2, 18: -1.5}, 3, 7, 6),  # pad_value
    ({1: 3, 4: -233}, 3, 9, 10),  # SAME_UPPER
    ({1: 4, 3: 2, 4: -233}, 3, 9, 10),  # SAME_UPPER, odd total pad
    ({1: 4, 3: 2, 4: -234}, 3, 9, 10),  # SAME_LOWER
    ({1: 3, 2: 2, 3: 3, 4: -234, 18: 0.5}, 2, 11, 13),  # SAME_LOWER, dilated, pad_value
    ({1: 2, 3: 2, 4: -233}, 3, 8, 8),  # SAME with nothing to pad
    ({1: 1}, 1, 1, 1),  # the smallest blob
    ({1: 3, 4: 1}, 1, 1, 1),  # a 1x1 input, all border
    ({1: 1, 4: 1, 18: 0.5}, 3, 11, 13),  # 1x1 with a border of pad_value (SqueezeNet's conv10)
    ({1: 3, 3: 2}, 3, 11, 13),  # SqueezeNet's conv1 shape
    ({1: 4, 4: -233}, 3, 11, 13),  # even kernel: odd SAME pad goes after
    ({1: 4, 3: 2, 4: -234, 18: 0.25}, 3, 11, 13),
    ({1: 5, 3: 2, 12: 2, 4: 1}, 3, 11, 13),  # dilation_h only
    ({1: 2, 11: 3, 3: 1, 13: 2, 4: 1, 15: 0, 14: 2, 16: 1, 18: -1.5}, 8, 9, 7),  # rectangular
    ({1: 1, 11: 3, 14: 1, 16: 0}, 3, 11, 13),
    ({1: 5, 11: 2, 2: 2, 12: 1, 13: 2, 4: 1, 15: 2, 14: 0, 16: 1, 18: -0.5}, 3, 11, 13),
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", CONV_GEOMETRY, ids=lambda g: str(g[0]))
@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_geometry(geom, bias, backend):
    params, c, h, w = geom
    conv_case({0: 7, **params}, c, h, w, bias, backend=backend)


ACTIVATIONS = [
    (0, None),
    (1, None),
    (2, [0.1]),
    (3, [-0.5, 0.7]),
    (4, None),
    (5, None),
    (6, [0.2, 0.5]),
    (6, [1.0 / 6.0, 0.5]),
]


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: f"act{a[0]}-{a[1]}")
@pytest.mark.parametrize("geom", [({0: 6, 1: 3, 4: 1}, 4, 8, 9), ({0: 16, 1: 3, 4: 1}, 16, 13, 15)], ids=str)
@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_activation(act, geom, backend):
    # the second geometry takes the CPU's Winograd path (ReLU is fused into its output transform)
    kind, values = act
    params, c, h, w = geom
    p = {**params, 9: kind}
    if values is not None:
        p[10] = values
    # a wide input range reaches every branch of Clip, HardSwish and the sigmoid clamp
    conv_case(p, c, h, w, scale=6.0, backend=backend)


# Winograd F(4,3): 3x3 stride 1 with 16+ channels in and out and 16+ output tiles of 4x4
WINOGRAD = [
    ({4: 1}, 16, 16, 16, 16),  # exactly four tiles per axis
    ({4: 1}, 17, 19, 13, 27),  # partial tiles on both axes, odd channel counts
    ({}, 32, 24, 30, 18),  # unpadded: output 28x16
    ({4: 1, 15: 0, 14: 2, 16: 1, 18: 0.75}, 16, 20, 19, 21),  # four pads and a pad_value
    ({4: -233}, 24, 16, 15, 17),  # SAME
    ({4: 1}, 64, 64, 56, 56),  # a ResNet / VGG shape
]


@pytest.mark.parametrize("native", [True, False], ids=["native", "numpy"])
@pytest.mark.parametrize("geom", WINOGRAD, ids=lambda g: f"{g[1]}x{g[3]}x{g[4]}->{g[2]} {g[0]}")
def test_convolution_winograd(geom, native, request, monkeypatch):
    if not native:
        request.getfixturevalue("numpy_only")
    import ncnn_c.layer.convolution as conv

    calls = []
    real = conv.winograd43_into
    monkeypatch.setattr(conv, "winograd43_into", lambda *a, **k: calls.append(1) or real(*a, **k))
    params, c, n, h, w = geom
    for act in (0, 1):
        # the plan's own Winograd is tests/test_native_winograd.py's: here the numpy layer's
        errs = conv_case({0: n, 1: 3, 9: act, **params}, c, h, w, bias=act == 1, native=False)
        assert max(errs.values()) <= 4e-6
    # the Net path on two threads: the transforms split channels over them (numpy layers: the
    # native plan's recording runs convolutions without Winograd, then the plan runs them)
    from ncnn_c.net.native.executor import NativeExecutor

    monkeypatch.setattr(NativeExecutor, "extract", lambda *a: None)
    conv_case({0: n, 1: 3, 9: 1, **params}, c, h, w, seed=1, paths=("net",), native=False, num_threads=2)
    # the layer path of both cases and the numpy Net took Winograd; without oneDNN (aarch64)
    # there is no native plan, and the Net path of both cases ran the numpy layers too
    from ncnn_c.net.native.plan import available

    assert len(calls) == (3 if available() else 5)


def test_convolution_winograd_is_used():
    """The Winograd weights (4x the kernel) are made by the first forward that takes that
    path: never by create_pipeline (a GPU layer, a layer the native plan runs), never for a
    layer that does not fit, never with use_winograd_convolution off (the native plan's
    recording pass)."""
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.modelbin import ModelBinFromMatArray
    from ncnn_c.paramdict import ParamDict

    def prepared(params, **flags):
        layer = create_layer_cpu("Convolution")
        pd = ParamDict()
        for k, v in params.items():
            pd.set(k, v)
        assert layer.load_param(pd) == 0
        assert layer.load_model(ModelBinFromMatArray([Mat(np.ones(params[6], np.float32))])) == 0
        opt = default_option()
        for k, v in flags.items():
            setattr(opt, k, v)
        assert layer.create_pipeline(opt) == 0
        assert layer._wino is None
        top = Mat()
        assert layer.forward(Mat(np.ones((16, 24, 24), np.float32)), top, opt) == 0
        return layer

    assert prepared({0: 16, 1: 3, 6: 16 * 16 * 9})._wino is not None
    assert prepared({0: 16, 1: 3, 6: 16 * 16 * 9}, use_winograd_convolution=False)._wino is None
    assert prepared({0: 16, 1: 3, 6: 16 * 16 * 9}, use_winograd43_convolution=False)._wino is None
    assert prepared({0: 16, 1: 3, 3: 2, 6: 16 * 16 * 9})._wino is None  # strided
    assert prepared({0: 16, 1: 3, 2: 2, 6: 16 * 16 * 9})._wino is None  # dilated
    assert prepared({0: 8, 1: 3, 6: 8 * 16 * 9})._wino is None  # few outputs


@pytest.mark.parametrize("shape", [(3, 7, 13), (16, 8, 8), (3, 227, 227)], ids=str)
@pytest.mark.parametrize("params", [{0: 8, 1: 3, 3: 2, 4: 1, 9: 1}, {0: 5, 1: 1}], ids=str)
@pytest.mark.parametrize("backend", backends("Convolution", grid=SPOT_GRID))
def test_convolution_shapes(shape, params, backend):
    c, h, w = shape
    conv_case(params, c, h, w, backend=backend)


@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_fp16_weights(backend):
    g = rng("fp16")
    weight = randn(g, (4, 3, 3, 3))
    check(backend, "Convolution", {0: 4, 1: 3, 6: weight.size}, [(weight, "fp16")], [randn(g, (3, 9, 8))])


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("pads", [{}, {4: 1}, {4: -233}, {4: 1, 15: 2, 14: 0, 16: 1, 18: 0.5}], ids=str)
def test_convolution_dynamic_weight(pads, bias):
    # 19=1: the weight (w=kw, h=kh, d=num_input, c=num_output) and the bias are input blobs
    g = rng("dyn", sorted(pads.items()), bias)
    x = randn(g, (3, 9, 11))
    weight = randn(g, (4, 3, 2, 3))
    inputs = [x, weight] + ([randn(g, (4,))] if bias else [])
    params = {0: 4, 1: 3, 11: 2, 5: int(bias), 6: weight.size, 9: 1, 19: 1, **pads}
    check_layer("Convolution", params, [], inputs)


# ncnn's deprecated 1-D input: a 1x1 convolution over a flat blob is an InnerProduct (PaddleOCR
# v5's detection model: squeeze-excite convolutions after a global pool and a Reshape to one
# dimension; "needs a 3-D elempack 1 blob, got dims 1 elempack 4" on the GPU before)
@pytest.mark.parametrize(
    "n,num_output,act", [(12, 5, 1), (192, 48, 1), (48, 192, 0), (12, 7, 2), (5, 4, 0)], ids=str
)
@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_flat_input(n, num_output, act, backend):
    g = rng("conv-flat", n, num_output, act)
    params = {0: num_output, 1: 1, 5: 1, 6: n * num_output}
    if act:
        params[9] = act
        if ACTS[act]:
            params[10] = ACTS[act]
    weights = [randn(g, n * num_output, 0.3), (randn(g, num_output), 1)]
    check(backend, "Convolution", params, weights, [randn(g, (n,))])


def test_convolution_numpy_fallback_paths(numpy_only):
    # the border copy without its native kernel, then every non-Winograd path
    conv_case({0: 7, 1: 3, 4: 2, 15: 1, 18: -0.5}, 3, 9, 11)
    conv_case({0: 7, 1: 1, 3: 2}, 5, 9, 11)


BAD_PARAMS = [
    ({0: 2, 1: 1, 6: 6, 8: 1}, "int8"),
    ({0: 2, 1: 1, 6: 6, 9: 7}, "activation_type"),
    ({0: 2, 1: 1, 6: 6, 9: 2}, "needs 1 params"),
    ({0: 2, 1: 1, 6: 6, 9: 3, 10: [0.0]}, "needs 2 params"),
    ({0: 2, 1: 1, 6: 7}, "weight_data_size"),
    ({0: 0, 1: 1, 6: 6}, "num_output"),
    ({0: 2, 1: 0, 6: 6}, "kernel_w"),
    ({0: 2, 1: 1, 6: 6, 3: 0}, "stride_w"),
    ({0: 2, 1: 1, 6: 6, 12: 0}, "dilation_h"),
]


@pytest.mark.parametrize("params,msg", BAD_PARAMS, ids=lambda v: str(v))
def test_convolution_rejects_bad_params(params, msg, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "Convolution", params, [(np.ones(6, np.float32), 0)], [np.ones((3, 2, 2), np.float32)]
        )
    assert ret != 0
    assert msg in caplog.text


@pytest.mark.parametrize(
    "shape,msg",
    [((4, 2, 2), "input channels"), ((3, 2), "3-D"), ((1, 3, 2, 2), "3-D"), ((7,), "flat input")],
    ids=str,
)
def test_convolution_rejects_bad_input(shape, msg, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "Convolution", {0: 2, 1: 1, 6: 6}, [(np.ones(6, np.float32), 0)], [np.ones(shape, np.float32)]
        )
    assert ret != 0
    assert msg in caplog.text


def test_convolution_rejects_input_smaller_than_kernel(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "Convolution",
            {0: 2, 1: 3, 6: 18},
            [(np.ones(18, np.float32), 0)],
            [np.ones((1, 2, 5), np.float32)],
        )
    assert ret != 0
    assert "smaller than the kernel" in caplog.text


def test_convolution_dynamic_weight_rejects_missing_blobs(caplog):
    x = np.ones((3, 5, 5), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "Convolution", {0: 2, 1: 3, 5: 1, 19: 1}, [], [x, np.ones((2, 3, 3, 3), np.float32)]
        )
    assert ret != 0
    assert "needs 3 input blobs" in caplog.text
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Convolution", {0: 2, 1: 3, 19: 1}, [], [x, np.ones((2, 3, 9), np.float32)])
    assert ret != 0
    assert "4-D" in caplog.text


# the 26 convolutions of SqueezeNet v1.1: (c_in, c_out, kernel, stride, pad, h=w)
SQUEEZENET_CONVS = [(3, 64, 3, 2, 0, 227)] + [
    conv
    for cin, sq, ex, hw in [
        (64, 16, 64, 56), (128, 16, 64, 56), (128, 32, 128, 28), (256, 32, 128, 28),
        (256, 48, 192, 14), (384, 48, 192, 14), (384, 64, 256, 14), (512, 64, 256, 14),
    ]
    for conv in [(cin, sq, 1, 1, 0, hw), (sq, ex, 1, 1, 0, hw), (sq, ex, 3, 1, 1, hw)]
] + [(512, 1000, 1, 1, 1, 14)]  # fmt: skip


def test_convolution_squeezenet_shapes_speed():
    """Every SqueezeNet convolution shape: correct, and fast enough for the milestone (~0.1 s total)."""

    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.modelbin import ModelBinFromMatArray
    from ncnn_c.paramdict import ParamDict

    assert len(SQUEEZENET_CONVS) == 26
    opt = default_option()
    total = 0.0
    for cin, cout, k, s, pad, hw in SQUEEZENET_CONVS:
        g = rng("sqz", cin, cout, k, hw)
        weight = randn(g, (cout, cin, k, k), 1.0 / np.sqrt(cin * k * k))
        bias = randn(g, (cout,))
        params = {0: cout, 1: k, 3: s, 4: pad, 5: 1, 6: weight.size, 9: 1}
        pd = ParamDict()
        for key, v in params.items():
            pd.set(key, v)
        layer = create_layer_cpu("Convolution")
        assert layer.load_param(pd) == 0
        assert layer.load_model(ModelBinFromMatArray([Mat(weight.ravel()), Mat(bias)])) == 0
        bottom, top = Mat(randn(g, (cin, hw, hw))), Mat()
        t0 = time.perf_counter()
        assert layer.forward(bottom, top, opt) == 0
        total += time.perf_counter() - t0
        text = make_param("Convolution", params, [(cin, hw, hw)])
        ret, ref = run_ncnn(text, make_bin([(weight, 0), (bias, 1)]), [bottom.numpy()])
        assert ret == 0
        assert rel_l2(top.numpy(), ref[0]) <= TOL
    print(f"SqueezeNet convolutions: {total * 1e3:.1f} ms")


@pytest.mark.slow
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("pads", [{}, {4: 1}, {4: 2, 15: 0, 14: 1, 16: 3}, {4: -233}, {4: -234}], ids=str)
@pytest.mark.parametrize("kernel", [(1, 1), (2, 2), (3, 3), (5, 3)], ids=str)
def test_convolution_exhaustive(kernel, pads, bias):
    for stride, dilation in itertools.product((1, 2, 3), (1, 2)):
        p = {0: 9, 1: kernel[0], 11: kernel[1], 3: stride, 2: dilation, **pads}
        conv_case(p, 5, 13, 11, bias)
        if kernel == (3, 3) and stride == dilation == 1:
            conv_case({**p, 0: 20}, 18, 13, 11, bias)  # the Winograd path


@pytest.mark.slow
@pytest.mark.parametrize("c,n,hw", [(128, 128, 28), (256, 256, 14), (512, 512, 7), (512, 512, 14)], ids=str)
def test_convolution_winograd_deep(c, n, hw):
    errs = conv_case({0: n, 1: 3, 4: 1, 9: 1}, c, hw, hw)
    assert max(errs.values()) <= 5e-6


# -- SAME padding whose total is negative (a kernel smaller than the stride) --------------------
# ncnn crops rows at the bottom whatever the SAME flavour; its oracle is memory-unsafe here (its
# border copy writes out of bounds for negative pads), so it runs isolated


@pytest.mark.parametrize("pads", [-233, -234])
@pytest.mark.parametrize("backend", backends("Convolution", grid=SPOT_GRID))
def test_same_padding_kernel_smaller_than_stride(pads, backend):
    # one axis needs padding, the other a crop
    g = rng("same-crop")
    x = randn(g, (2, 9, 10))
    weight = randn(g, (3, 2, 2, 2))
    check(backend, "Convolution", {0: 3, 1: 2, 3: 3, 4: pads, 6: 24}, [(weight, 0)], [x], isolate=True)


SAME_NEGATIVE = [
    ((2, 5, 8), 1, 3, 4, 1),  # width total -3 (left -1 / right -2 split), height pads
    ((5, 3, 8), 2, 1, 2, 1),  # width total -1 and height 0
    ((1, 9, 11), 4, 2, 2, 3),  # height total -1 (crop), width pads
    ((2, 7, 9), 1, 1, 3, 4),  # every total negative: ncnn does not pad or crop at all
]


@pytest.mark.parametrize("pads", [-233, -234])
@pytest.mark.parametrize("shape,kw,kh,sw,sh", SAME_NEGATIVE, ids=str)
@pytest.mark.parametrize("backend", backends("Convolution", grid=SPOT_GRID))
def test_same_padding_negative_totals_on_either_axis(shape, kw, kh, sw, sh, pads, backend):
    # rows of fewer than 12 floats: where ncnn's own negative-left border copy is memory-safe
    g = rng("same-neg", shape, kw, kh)
    x = randn(g, shape)
    weight = randn(g, (3, shape[0], kh, kw))
    params = {0: 3, 1: kw, 11: kh, 3: sw, 13: sh, 4: pads, 5: 0, 6: weight.size}
    check(backend, "Convolution", params, [(weight, 0)], [x], isolate=True)


def test_convolution_flags():
    from ncnn_c.layer import create_layer_cpu

    layer = create_layer_cpu("Convolution")
    assert type(layer).__name__ == "Convolution" and layer.type == "Convolution"
    assert layer.one_blob_only and not layer.support_inplace


@pytest.mark.gpu
@pytest.mark.parametrize(
    "layer_type",
    ["Convolution", "ConvolutionDepthWise", "Convolution1D", "Deconvolution", "DeconvolutionDepthWise"],
)
def test_dynamic_weight_layers_stay_on_the_cpu(layer_type):
    """Weights arriving as a blob (param 19) have no GPU form: the layer says so at load_param."""
    from ncnn_c.layer import create_layer_vulkan
    from ncnn_c.paramdict import ParamDict

    for dynamic in (0, 1):
        layer = create_layer_vulkan(layer_type)
        pd = ParamDict()
        pd.set(0, 4)
        pd.set(1, 3)
        pd.set(6, 4 * 4 * 9)
        pd.set(28 if layer_type.startswith("Deconvolution") else 19, dynamic)  # dynamic_weight
        assert layer.load_param(pd) == 0
        assert layer.support_vulkan is (not dynamic)


# -- the GPU form ------------------------------------------------------------------------------
GEOMETRIES = [
    {1: 1},
    {1: 1, 3: 2},
    {1: 3, 3: 2},
    {1: 3, 4: 1},
    {1: 3, 2: 2, 4: 2},
    {1: 3, 3: 2, 4: -233},
    {1: 4, 3: 2, 4: -234, 18: 0.25},
]
ACTS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.8], 4: None, 5: None, 6: [0.2, 0.5]}


def _case(geometry, act, shape, num_output, fp16_weights=False, bias=1, grid=None, backend=None):
    """A case over ``grid`` (check_layer_gpu) or on one ``backend`` (oracle.check)."""
    g = rng("conv", str(geometry), act, shape, num_output)
    k = geometry.get(1, 1)
    kh = geometry.get(11, k)
    params = {**geometry, 0: num_output, 5: bias, 6: k * kh * shape[0] * num_output}
    if act:
        params[9] = act
        if ACTS[act]:
            params[10] = ACTS[act]
    w = randn(g, params[6], 0.3)
    weights = [(w, "fp16") if fp16_weights else w] + ([(randn(g, num_output), 1)] if bias else [])
    if backend is not None:
        return check(backend, "Convolution", params, weights, [randn(g, shape)])
    return check_layer_gpu("Convolution", params, weights, [randn(g, shape)], grid=grid)


# (input shape, num_output): elempack 1 -> 1, 4 -> 4, 1 -> 4 and 4 -> 1 once packing is on
PACKINGS = [((3, 11, 13), 7), ((8, 9, 9), 8), ((3, 10, 7), 12), ((12, 7, 9), 6)]


# the geometries every packing transition runs with (their pads and strides differ): the
# first seven on the whole grid, the rest (separate w/h kernel, dilation, stride and asymmetric
# pads with a pad_value) too
PACKING_GEOMETRIES = GEOMETRIES + [
    {1: 1, 11: 3, 14: 1, 16: 0},
    {1: 5, 11: 2, 2: 2, 12: 1, 13: 2, 4: 1, 15: 2, 14: 0, 16: 1, 18: -0.5},
]


@pytest.mark.parametrize("geometry", PACKING_GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape,num_output", PACKINGS, ids=str)
@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_packings(geometry, shape, num_output, backend):
    _case(geometry, 0, shape, num_output, backend=backend)


@pytest.mark.parametrize("shape,num_output", PACKINGS, ids=str)
@pytest.mark.parametrize("backend", backends("Convolution", grid=["fp32", "fp32-pack", "fp16s-pack"]))
def test_convolution_no_bias(shape, num_output, backend):
    _case({1: 3, 4: 1}, 1, shape, num_output, bias=0, backend=backend)


@pytest.mark.parametrize("shape,num_output", [((16, 23, 29), 40), ((20, 1, 1), 36), ((4, 1, 37), 4)], ids=str)
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize(
    "backend", backends("Convolution", grid=["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"])
)
def test_convolution_wide_tiles(shape, num_output, k, backend):
    """More output channels and positions than one invocation's tile, and 1-pixel planes."""
    _case({1: k, 4: k // 2}, 2, shape, num_output, backend=backend)


# The direct shader tiles output positions x output channels per invocation and reads input rows
# as aligned vec4s: rows of several tiles with a partial last one, row starts at every alignment,
# planes that are no multiple of 8, and output channel counts that leave a partial group
TILE_GEOMETRIES = [
    {1: 1},  # flat 1x1
    {1: 1, 4: 1},  # 1x1 with a border (conv10)
    {1: 3, 4: 1},  # 3x3 s1 (fire expand)
    {1: 3, 3: 2},  # 3x3 s2 (conv1)
    {1: 3, 2: 2, 4: 2},  # dilated
    {1: 5, 3: 3, 4: 1, 18: 0.5},  # wide window, stride 3
]


@pytest.mark.parametrize("geometry", TILE_GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape,num_output", [((5, 17, 23), 19), ((9, 6, 7), 16), ((2, 3, 30), 33)], ids=str)
@pytest.mark.parametrize("fp16_weights", [False, True])
@pytest.mark.parametrize("backend", backends("Convolution", grid=SPOT_GRID))
def test_convolution_tiles(geometry, shape, num_output, fp16_weights, backend):
    _case(geometry, 1, shape, num_output, fp16_weights=fp16_weights, backend=backend)


@pytest.mark.gpu
@pytest.mark.parametrize("geometry", TILE_GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape,num_output", [((5, 17, 23), 19), ((2, 3, 30), 33)], ids=str)
@pytest.mark.parametrize("fp16_weights", [False, True])
def test_convolution_gpu_tile_shape(monkeypatch, geometry, shape, num_output, fp16_weights):
    """The small tiles discrete GPUs get, checked here on lavapipe (a CPU device gets big ones)."""
    from ncnn_c.layer.vulkan.convolution_vulkan import Convolution_vulkan

    monkeypatch.setattr(Convolution_vulkan, "_tile_shape", lambda self: (4, 2))
    _case(geometry, 1, shape, num_output, fp16_weights=fp16_weights, grid=["fp32"])


@pytest.mark.gpu
def test_convolution_bottom_in_other_packing():
    """A producer that cannot pack (Softmax) hands 8 channels as elempack 1: the layer converts."""
    g = rng("conv-after-softmax")
    param = (
        "\n".join(
            [
                "7767517",
                "3 3",
                "Input in0 0 1 in0 0=9 1=7 2=8",
                "Softmax sm 1 1 in0 s0 0=0",
                "Convolution op 1 1 s0 out0 0=8 1=3 4=1 5=1 6=576",
            ]
        )
        + "\n"
    )
    weights = make_bin([randn(g, 576), (randn(g, 8), 1)])
    x = randn(g, (8, 7, 9))
    ret, ref = run_ncnn(param, weights, [x])
    assert ret == 0
    for name in ("fp32-pack", "fp16s-pack"):
        ret, got = run_net_gpu(param, weights, [x], **GPU_GRID[name])
        assert ret == 0
        assert_close(got[0], ref[0], 1e-2 if "fp16" in name else 1e-4, name)


@pytest.mark.parametrize("act", range(1, 7))
@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_activation_packed(act, backend):
    _case({1: 3, 4: 1}, act, (4, 9, 11), 8, backend=backend)


@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_fp16_weights_packed(backend):
    _case({1: 3, 4: 1}, 1, (8, 9, 11), 16, fp16_weights=True, backend=backend)


@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_deep_fp16_accumulation(backend):
    """512 x 3x3 taps per output: fp16 arithmetic accumulation must still meet 1e-2."""
    _case({1: 3, 4: 1}, 0, (512, 6, 6), 8, backend=backend)


# -- the implicit-GEMM path (convolution_pack4_gemm.comp) -------------------------------------
# "auto" picks it on GPUs only; these tests force it on lavapipe and check that it really ran.

PACK_GRID = ["fp32-pack", "fp16s-pack", "fp16sa-pack", "fp16pa-pack"]


def _record_gemm(monkeypatch, policy: str, gpu: bool = False) -> list[bool]:
    """Set the GEMM policy (and with ``gpu`` make lavapipe pass for a GPU device: "auto"
    then picks the GEMM and convolutions keep fp16 arithmetic); returns a list that gets,
    per Convolution forward, whether the GEMM shader ran."""
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.delenv("NCNN_C_CONV_GEMM", raising=False)
    monkeypatch.setattr(cv, "GEMM_POLICY", policy)
    if gpu:
        monkeypatch.setattr(cv.Convolution_vulkan, "cpu_device", lambda self: False)
    runs: list[bool] = []
    forward = cv.Convolution_vulkan.forward_vk

    def spy(self, bottom, top, cmd, opt):
        runs.append(self._gemm)
        return forward(self, bottom, top, cmd, opt)

    monkeypatch.setattr(cv.Convolution_vulkan, "forward_vk", spy)
    return runs


@pytest.fixture
def gemm_runs(monkeypatch):
    """The GEMM forced on ("always"); see _record_gemm."""
    return _record_gemm(monkeypatch, "always")


def _gemm_case(runs, geometry, shape, num_output, act=0, bias=1, fp16_weights=False, grid=PACK_GRID):
    errs = _case(geometry, act, shape, num_output, fp16_weights=fp16_weights, bias=bias, grid=grid)
    assert runs and all(runs), "the GEMM shader did not run"
    runs.clear()
    return errs


# (geometry, input shape, num_output): every geometry branch, K (inc/4 x taps) below, at and
# above a 16-tap step, positions below and across a 32-position tile, outc below and across
# the 32-channel tile (36: a second tile holding one vec4)
GEMM_CASES = [
    ({1: 1}, (16, 13, 17), 36),  # flat 1x1
    ({1: 1}, (64, 5, 7), 32),  # flat 1x1, K = 16: one full step
    ({1: 1, 3: 2}, (8, 13, 17), 12),  # 1x1 stride 2: not flat
    ({1: 3, 4: 1}, (16, 13, 17), 36),
    ({1: 3, 4: 1}, (128, 9, 9), 64),  # K = 288: 18 steps
    ({1: 3, 3: 2}, (12, 13, 17), 20),
    ({1: 5, 2: 2, 4: 2}, (8, 17, 13), 12),  # dilation 2
    ({1: 7, 3: 2, 4: 3}, (4, 23, 19), 8),
    ({1: 3, 11: 1, 2: 1, 3: 2, 13: 1, 4: 1, 14: 0, 15: 2, 16: 1, 18: -0.5}, (8, 9, 11), 16),  # kw != kh
    ({1: 1, 11: 3, 12: 2, 14: 1, 16: 0}, (8, 11, 7), 8),  # kh > kw, dilation_h only
    ({1: 3, 4: 1}, (32, 1, 1), 40),  # 1x1 plane
    ({1: 3, 3: 2, 4: -233}, (8, 13, 17), 12),  # SAME_UPPER
    ({1: 4, 3: 2, 4: -234, 18: 0.25}, (8, 13, 17), 12),  # SAME_LOWER, even kernel, pad_value
]


@pytest.mark.gpu
@pytest.mark.parametrize("geometry,shape,num_output", GEMM_CASES, ids=str)
def test_convolution_gemm_grid(gemm_runs, geometry, shape, num_output):
    _gemm_case(gemm_runs, geometry, shape, num_output)


@pytest.mark.gpu
@pytest.mark.parametrize("act", range(1, 7))
@pytest.mark.parametrize("bias", [0, 1])
def test_convolution_gemm_activation_bias(gemm_runs, act, bias):
    _gemm_case(gemm_runs, {1: 3, 4: 1}, (8, 9, 11), 12, act=act, bias=bias, grid=["fp32-pack", "fp16s-pack"])


@pytest.mark.gpu
@pytest.mark.parametrize("k", [1, 3])
def test_convolution_gemm_fp16_weights(gemm_runs, k):
    _gemm_case(gemm_runs, {1: k, 4: k // 2}, (16, 9, 11), 36, act=1, fp16_weights=True)


@pytest.mark.gpu
def test_convolution_gemm_deep_fp16_accumulation(gemm_runs):
    """512 x 3x3 taps per output (72 steps) through the GEMM: fp16 still within 1e-2."""
    _gemm_case(gemm_runs, {1: 3, 4: 1}, (512, 6, 6), 32, grid=["fp32-pack", "fp16s-pack"])


@pytest.mark.gpu
@pytest.mark.parametrize(
    "geometry,shape,num_output",
    [({1: 3, 4: 1}, (16, 13, 17), 36), ({1: 1}, (64, 5, 7), 32), ({1: 3, 4: 1}, (128, 6, 6), 32)],
    ids=str,
)
@pytest.mark.parametrize("fp16_weights", [False, True])
def test_convolution_gemm_as_on_a_gpu(monkeypatch, geometry, shape, num_output, fp16_weights):
    """What a discrete GPU runs, on lavapipe: "auto" picks the GEMM for these layers and
    fp16 arithmetic stays on (a CPU device turns it off for convolutions)."""
    runs = _record_gemm(monkeypatch, "auto", gpu=True)
    _gemm_case(runs, geometry, shape, num_output, act=1, fp16_weights=fp16_weights, grid=PACK_GRID)


@pytest.mark.gpu
def test_convolution_gemm_deep_fp16_arithmetic(monkeypatch):
    """512 x 3x3 taps with real fp16 arithmetic (as on a GPU): the shader sums each K step in
    fp16 and the steps in fp32, measured 7.6e-4 here; one fp16 running sum measured 4.5e-3,
    so the 2e-3 bar checks that the steps really add up in fp32."""
    runs = _record_gemm(monkeypatch, "auto", gpu=True)
    errs = _gemm_case(runs, {1: 3, 4: 1}, (512, 6, 6), 32, grid=["fp16sa-pack", "fp16pa-pack"])
    assert max(errs.values()) <= 2e-3, errs


def _selected(monkeypatch, policy, env, shape, num_output, k=3, packing=True, gpu=False) -> bool:
    """Whether a Convolution layer built under this policy / NCNN_C_CONV_GEMM runs the GEMM."""
    import ncnn_c
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.setattr(cv, "GEMM_POLICY", policy)
    if env is None:
        monkeypatch.delenv("NCNN_C_CONV_GEMM", raising=False)
    else:
        monkeypatch.setenv("NCNN_C_CONV_GEMM", env)
    # the device type decides "auto": pretend either way, so the test means the same on
    # lavapipe and on a real GPU
    monkeypatch.setattr(cv.Convolution_vulkan, "cpu_device", lambda self: not gpu)
    size = k * k * shape[0] * num_output
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    net.opt.use_packing_layout = packing
    assert net.load_param_mem(make_param("Convolution", {0: num_output, 1: k, 6: size}, [shape])) == 0
    assert net.load_model_mem(make_bin([np.zeros(size, np.float32)])) == 0
    layer = net.layers()[1]
    assert layer.vkdev is not None
    gemm = layer._gemm
    net.clear()
    return gemm


@pytest.mark.gpu
def test_convolution_gemm_selection(monkeypatch):
    # a CPU device (lavapipe) keeps the direct shader under "auto"
    assert not _selected(monkeypatch, "auto", None, (64, 8, 8), 64)
    assert _selected(monkeypatch, "always", None, (64, 8, 8), 64)
    # the environment overrides the module setting, either way
    assert _selected(monkeypatch, "never", "always", (8, 8, 8), 8)
    assert not _selected(monkeypatch, "always", "never", (64, 8, 8), 64)
    # only elempack 4 -> 4 has a GEMM shader
    assert not _selected(monkeypatch, "always", None, (64, 8, 8), 64, packing=False)
    assert not _selected(monkeypatch, "always", None, (64, 8, 8), 30)
    assert not _selected(monkeypatch, "always", None, (6, 8, 8), 64)
    # "auto" on a GPU: outc >= 32 and inc x taps >= 64
    assert _selected(monkeypatch, "auto", None, (64, 8, 8), 32, k=1, gpu=True)
    assert _selected(monkeypatch, "auto", None, (8, 8, 8), 32, k=3, gpu=True)
    assert not _selected(monkeypatch, "auto", None, (4, 8, 8), 32, k=3, gpu=True)
    assert not _selected(monkeypatch, "auto", None, (64, 8, 8), 28, k=1, gpu=True)
    assert not _selected(monkeypatch, "auto", None, (32, 8, 8), 64, k=1, gpu=True)


@pytest.mark.gpu
@pytest.mark.parametrize("env", ["sometimes", "ALWAYS "])
def test_convolution_gemm_policy_values(monkeypatch, env):
    """Values are case- and space-insensitive; anything else fails the load with a clear log."""
    import ncnn_c
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.setenv("NCNN_C_CONV_GEMM", env)
    if env.strip().lower() == "always":
        assert cv.gemm_policy() == "always"
        return
    with pytest.raises(ValueError, match="NCNN_C_CONV_GEMM"):
        cv.gemm_policy()
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    assert net.load_param_mem(make_param("Convolution", {0: 8, 1: 1, 6: 64}, [(8, 4, 4)])) == 0
    assert net.load_model_mem(make_bin([np.zeros(64, np.float32)])) != 0
    net.clear()


@pytest.mark.gpu
@pytest.mark.parametrize("tile", ["8,8,4,1", "8,8,4,1,x", "8,8,3,1,1", "0,8,4,1,16"])
def test_convolution_gemm_bad_tile(monkeypatch, tile):
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.setenv("NCNN_C_CONV_GEMM_TILE", tile)
    with pytest.raises(ValueError, match="tile|TILE"):
        cv.gemm_tile()


@pytest.mark.gpu
@pytest.mark.parametrize("tile", ["16,4,4,2,8", "8,16,2,1,8", "4,4,2,2,4"])
def test_convolution_gemm_other_tiles(gemm_runs, monkeypatch, tile):
    """The tile is a set of specialization constants: other shapes stay correct."""
    monkeypatch.setenv("NCNN_C_CONV_GEMM_TILE", tile)
    _gemm_case(gemm_runs, {1: 3, 4: 1}, (16, 13, 17), 36, act=1, grid=["fp32-pack", "fp16s-pack"])


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize(
    "geometry",
    [{1: 1}, {1: 3, 4: 1}, {1: 3, 3: 2}, {1: 5, 2: 2, 4: 2}, {1: 7, 3: 2, 4: 3}, {1: 3, 3: 2, 4: -233}],
    ids=str,
)
@pytest.mark.parametrize(
    "shape,num_output", [((128, 55, 55), 128), ((64, 28, 28), 100), ((8, 9, 7), 36)], ids=str
)
def test_convolution_gemm_sweep(gemm_runs, geometry, shape, num_output):
    _gemm_case(gemm_runs, geometry, shape, num_output, act=1)


# -- kernels whose taps hardly overlap (stride near the kernel size) ---------------------------
# A ViT's patch embedding (32x32 stride 32) made the direct shaders stage a row window of
# (tile_w - 1) * stride + kernel inputs per invocation (512 at 16 positions); llvmpipe computed
# wrong sums past a few KiB of such private arrays (vision_transformer.param: rel L2 0.4 after
# its first layer). These shapes read their taps directly (MAX_WINDOW).
PATCH_CASES = [
    ({1: 32, 3: 32}, (3, 64, 384), 8),  # the ViT's patch embedding, 2 rows of 12 patches
    ({1: 32, 3: 32}, (16, 32, 128), 8),  # 16 channels: wrong even at a GPU's 4-position tile
    ({1: 16, 3: 16}, (64, 16, 32), 12),  # elempack 4 in with packing
    ({1: 32, 3: 1}, (16, 32, 40), 8),  # stride 1: a 35..47-input window
    ({1: 8, 3: 8, 4: 3}, (5, 29, 61), 8),  # padded, so taps outside read pad_value
]


@pytest.mark.parametrize("geometry,shape,num_output", PATCH_CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Convolution", grid=["fp32", "fp32-pack", "fp16s-pack"]))
def test_convolution_patch_kernels(geometry, shape, num_output, backend):
    _case(geometry, 0, shape, num_output, backend=backend)


@pytest.mark.gpu
def test_convolution_patch_kernels_gpu_tile(monkeypatch):
    """The same shapes at a GPU's tile (4 positions x 8 channels), which lavapipe never picks."""
    from ncnn_c.layer.vulkan import convolution_vulkan as cv

    monkeypatch.setattr(cv.Convolution_vulkan, "_tile_shape", lambda self: (4, 2))
    for geometry, shape, num_output in PATCH_CASES[:3]:
        _case(geometry, 0, shape, num_output, grid=["fp32", "fp32-pack"])


@pytest.mark.gpu
def test_convolution_flat_input_wrong_size_is_refused():
    g = rng("conv-flat-bad")
    param = make_param("Convolution", {0: 4, 1: 1, 5: 0, 6: 32}, [(6,)])
    ret, _ = run_net_gpu(param, make_bin([randn(g, 32)]), [randn(g, (6,))])
    assert ret != 0


@pytest.mark.gpu
@pytest.mark.parametrize("fp32_flags", [True, False], ids=["fp32", "default"])
def test_squeezenet_pipelines(models_dir, fp32_flags):
    """SqueezeNet v1.1 end to end on the GPU; identical layers must share pipelines."""

    import ncnn_c

    param, model = str(models_dir / "squeezenet_v1.1.param"), str(models_dir / "squeezenet_v1.1.bin")
    x = np.random.default_rng(0).uniform(-1, 1, (3, 227, 227)).astype(np.float32)

    ref_net = ncnn.Net()
    _apply(ref_net.opt, FP32_FLAGS)
    assert ref_net.load_param(param) == 0 and ref_net.load_model(model) == 0
    with ref_net.create_extractor() as ex:
        ex.input("data", ncnn.Mat(x).clone())
        ret, m = ex.extract("prob")
        ref = np.array(m, dtype=np.float32, copy=True)

    net = ncnn_c.Net()
    if fp32_flags:
        _apply(net.opt, FP32_FLAGS)
    net.opt.use_vulkan_compute = True
    assert net.load_param(param) == 0 and net.load_model(model) == 0
    assert all(layer.vkdev is not None for layer in net.layers())
    # 3 general convolutions (3x3 s2, 3x3 s1, 1x1 padded), the flat 1x1, max and global
    # pooling, concat, softmax, and the net's layout conversion; with packing on (default)
    # the two poolings also get their elempack 4 variants, and the packed convolutions
    # use convolution_pack4 (the 16-output squeeze 1x1s with a smaller channel tile)
    assert net.opt.pipeline_cache.stats()["pipelines_created"] == (9 if fp32_flags else 13)
    with net.create_extractor() as ex:
        ex.input("data", ncnn_c.Mat(x))
        ret, m = ex.extract("prob")
    assert ret == 0
    # default options run fp16 storage and arithmetic: the per-network bar is 2e-2
    # (measured on lavapipe: 4e-3; the PyPI ncnn's own Vulkan path: 3e-3)
    assert rel_l2(np.array(m.numpy()), ref) <= (TOL if fp32_flags else 2e-2)
    net.clear()


LEGACY_ACTS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.8], 4: None, 5: None, 6: [0.2, 0.5]}


@pytest.mark.slow
@pytest.mark.parametrize(
    "k,s,d,pad,bias,act",
    list(itertools.product([1, 2, 3], [1, 2], [1, 2], [0, 1, -233, -234], [0, 1], range(7))),
)
@pytest.mark.parametrize("backend", backends("Convolution", grid=["fp32"]))
def test_convolution_exhaustive_activations(k, s, d, pad, bias, act, backend):
    _case({1: k, 2: d, 3: s, 4: pad}, act, (4, 10, 9), 3, bias=bias, backend=backend)
