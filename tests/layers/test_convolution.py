"""Convolution against the PyPI ncnn oracle: every param key, padding form and activation,
the im2col / 1x1 / Winograd F(4,3) paths (native transforms and their numpy fallback),
dynamic weights, ncnn's flat 1x1 form, and bad inputs.

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
from oracle import check_layer, make_bin, make_param, randn, rel_l2, rng, run_layer, run_ncnn

TOL = 1e-5


def conv_case(params, c, h, w, bias=True, scale=1.0, seed=0, **kw):
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
    return check_layer("Convolution", p, weights, [x], tol=TOL, **kw)


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
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", CONV_GEOMETRY, ids=lambda g: str(g[0]))
def test_convolution_geometry(geom, bias):
    params, c, h, w = geom
    conv_case({0: 7, **params}, c, h, w, bias)


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
def test_convolution_activation(act):
    kind, values = act
    p = {0: 6, 1: 3, 4: 1, 9: kind}
    if values is not None:
        p[10] = values
    # a wide input range reaches every branch of Clip, HardSwish and the sigmoid clamp
    conv_case(p, 4, 8, 9, scale=6.0)
    # the same activation after the Winograd path (ReLU is fused into its output transform)
    conv_case({**p, 0: 16}, 16, 13, 15, scale=6.0)


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
        errs = conv_case({0: n, 1: 3, 9: act, **params}, c, h, w, bias=act == 1)
        assert max(errs.values()) <= 4e-6
    # the Net path on two threads: the transforms split channels over them
    conv_case({0: n, 1: 3, 9: 1, **params}, c, h, w, seed=1, paths=("net",), num_threads=2)
    assert len(calls) == 5  # every case above took the Winograd path


def test_convolution_winograd_is_used():
    from oracle import default_option

    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    def prepared(params):
        layer = create_layer_cpu("Convolution")
        pd = ParamDict()
        for k, v in params.items():
            pd.set(k, v)
        assert layer.load_param(pd) == 0
        from ncnn_c.mat import Mat
        from ncnn_c.modelbin import ModelBinFromMatArray

        assert layer.load_model(ModelBinFromMatArray([Mat(np.ones(params[6], np.float32))])) == 0
        assert layer._wino is None  # transformed in create_pipeline, so a GPU layer never holds it
        assert layer.create_pipeline(default_option()) == 0
        return layer

    assert prepared({0: 16, 1: 3, 6: 16 * 16 * 9})._wino is not None
    assert prepared({0: 16, 1: 3, 3: 2, 6: 16 * 16 * 9})._wino is None  # strided
    assert prepared({0: 16, 1: 3, 2: 2, 6: 16 * 16 * 9})._wino is None  # dilated
    assert prepared({0: 8, 1: 3, 6: 8 * 16 * 9})._wino is None  # few outputs


@pytest.mark.parametrize("shape", [(3, 7, 13), (16, 8, 8), (3, 227, 227)], ids=str)
def test_convolution_shapes(shape):
    c, h, w = shape
    conv_case({0: 8, 1: 3, 3: 2, 4: 1, 9: 1}, c, h, w)
    conv_case({0: 5, 1: 1}, c, h, w)


def test_convolution_fp16_weights():
    g = rng("fp16")
    weight = randn(g, (4, 3, 3, 3))
    check_layer("Convolution", {0: 4, 1: 3, 6: weight.size}, [(weight, "fp16")], [randn(g, (3, 9, 8))])


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


def test_convolution_flat_input():
    # ncnn's deprecated 1x1 convolution over a 1-D blob (InnerProduct semantics)
    g = rng("flat")
    weight = randn(g, (5, 12, 1, 1))
    check_layer(
        "Convolution", {0: 5, 1: 1, 5: 1, 6: 60, 9: 1}, [(weight, 0), (randn(g, (5,)), 1)], [randn(g, (12,))]
    )


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
    from oracle import default_option

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
