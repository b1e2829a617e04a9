"""CPU layers of the SqueezeNet milestone checked against the PyPI ncnn oracle.

Each case builds a one-layer network, runs it in the oracle (CPU, fp32, one thread) and
in ncnn_c (the layer object directly, forward_inplace where the layer supports it, and
ncnn_c.Net), and requires a relative L2 error <= 1e-5. The default run covers every
param key and form with a representative grid; the exhaustive products are ``slow``.
"""

from __future__ import annotations

import itertools
import time
import zlib

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import pytest
from oracle import check_layer, make_bin, make_param, rel_l2, run_layer, run_ncnn

TOL = 1e-5


def rng(*key):
    """A generator seeded from the case itself, so every case is reproducible on its own."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def randn(g, shape, scale=1.0):
    return (g.standard_normal(shape) * scale).astype(np.float32)


# -- Convolution --------------------------------------------------------------------------------
def conv_case(params, c, h, w, bias=True, scale=1.0, seed=0):
    g = rng("conv", sorted(params.items()), c, h, w, bias, seed)
    kw = params[1]
    kh = params.get(11, kw)
    n = params[0]
    weight = randn(g, (n, c, kh, kw), 1.0 / np.sqrt(c * kh * kw))
    p = dict(params)
    p[5] = int(bias)
    p[6] = weight.size
    weights = [(weight, 0)]
    if bias:
        weights.append((randn(g, (n,)), 1))
    x = randn(g, (c, h, w), scale)
    return check_layer("Convolution", p, weights, [x], tol=TOL)


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


def test_convolution_flat_input():
    # ncnn's deprecated 1x1 convolution over a 1-D blob (InnerProduct semantics)
    g = rng("flat")
    weight = randn(g, (5, 12, 1, 1))
    check_layer(
        "Convolution", {0: 5, 1: 1, 5: 1, 6: 60, 9: 1}, [(weight, 0), (randn(g, (5,)), 1)], [randn(g, (12,))]
    )


@pytest.mark.parametrize("key", [8, 19], ids=["int8_scale_term", "dynamic_weight"])
def test_convolution_rejects_unsupported(key, caplog):
    ret, _ = run_layer(
        "Convolution",
        {0: 2, 1: 1, 6: 6, key: 1},
        [(np.ones(6, np.float32), 0)],
        [np.ones((3, 2, 2), np.float32)],
    )
    assert ret != 0
    assert "not supported" in caplog.text


def test_convolution_channel_mismatch_fails():
    ret, _ = run_layer(
        "Convolution", {0: 2, 1: 1, 6: 6}, [(np.ones(6, np.float32), 0)], [np.ones((4, 2, 2), np.float32)]
    )
    assert ret != 0


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


# -- Pooling -------------------------------------------------------------------------------------
# (the Pooling layer's own tests are in tests/layers/test_pooling.py; the SAME-padding cases
# below share their negative-pad geometry with Convolution)


def test_same_padding_kernel_smaller_than_stride():
    # one axis needs padding, the other a crop (negative total pad): ncnn crops rows at the
    # bottom whatever the SAME flavour; its oracle is memory-unsafe here, so it runs isolated
    g = rng("same-crop")
    x = randn(g, (2, 9, 10))
    weight = randn(g, (3, 2, 2, 2))
    for pads in (-233, -234):
        check_layer("Convolution", {0: 3, 1: 2, 3: 3, 4: pads, 6: 24}, [(weight, 0)], [x], isolate=True)
    for pad_mode, ptype in itertools.product((2, 3), (0, 1)):
        check_layer("Pooling", {0: ptype, 1: 2, 2: 3, 5: pad_mode}, [], [x], isolate=True)


@pytest.mark.parametrize("use_vulkan", [False, True], ids=["cpu", "gpu"])
@pytest.mark.parametrize(
    "shape,kw,kh,sw,sh",
    [
        ((2, 5, 8), 1, 3, 4, 1),  # width total -3 (left -1 / right -2 split), height pads
        ((5, 3, 8), 2, 1, 2, 1),  # width total -1 and height 0
        ((1, 9, 11), 4, 2, 2, 3),  # height total -1 (crop), width pads
        ((2, 7, 9), 1, 1, 3, 4),  # every total negative: ncnn does not pad or crop at all
    ],
    ids=str,
)
def test_same_padding_negative_totals_on_either_axis(shape, kw, kh, sw, sh, use_vulkan):
    # rows of fewer than 12 floats: where ncnn's own negative-left border copy is memory-safe
    g = rng("same-neg", shape, kw, kh)
    x = randn(g, shape)
    c = shape[0]
    weight = randn(g, (3, c, kh, kw))
    paths = ("net",) if use_vulkan else ("layer", "net")
    for pads in (-233, -234):
        params = {0: 3, 1: kw, 11: kh, 3: sw, 13: sh, 4: pads, 5: 0, 6: weight.size}
        check_layer(
            "Convolution", params, [(weight, 0)], [x], isolate=True, use_vulkan=use_vulkan, paths=paths
        )
    for pad_mode, ptype in itertools.product((2, 3), (0, 1)):
        params = {0: ptype, 1: kw, 11: kh, 2: sw, 12: sh, 5: pad_mode}
        check_layer("Pooling", params, [], [x], isolate=True, use_vulkan=use_vulkan, paths=paths)


@pytest.mark.parametrize("use_vulkan", [False, True], ids=["cpu", "gpu"])
def test_full_padding_tail_when_the_padded_input_is_smaller_than_the_kernel(use_vulkan):
    # (h + pads - kernel) is negative: ncnn's tail uses C's remainder, stride - (-1) = 3 rows
    x = randn(rng("tail-neg"), (6, 1, 2))
    params = {0: 0, 1: 4, 11: 3, 2: 1, 12: 2, 3: 2, 13: 1, 14: 0, 15: 0, 5: 0}
    paths = ("net",) if use_vulkan else ("layer", "net")
    check_layer("Pooling", params, [], [x], isolate=True, use_vulkan=use_vulkan, paths=paths)


# -- element-wise and shape layers --------------------------------------------------------------------
SHAPES = [(11,), (6, 9), (3, 5, 7), (2, 3, 5, 6)]


@pytest.mark.parametrize("slope", [0.0, 0.1, -0.3])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_relu(shape, slope):
    x = randn(rng("relu", shape, slope), shape)
    check_layer("ReLU", {0: slope}, [], [x], tol=TOL, paths=("layer", "inplace", "net"))


@pytest.mark.parametrize("scale", [1.0, 0.5, 3.0])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_dropout(shape, scale):
    x = randn(rng("dropout", shape, scale), shape)
    params = {} if scale == 1.0 else {0: scale}
    check_layer("Dropout", params, [], [x], tol=TOL, paths=("layer", "inplace", "net"))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_axes(shape):
    dims = len(shape)
    x = randn(rng("softmax", shape), shape, 4.0)
    for axis in range(-dims, dims):
        check_layer("Softmax", {0: axis, 1: 1}, [], [x], tol=TOL, paths=("layer", "inplace", "net"))
    # without fixbug0 only axis 0 loads (both in ncnn and here)
    check_layer("Softmax", {0: 0}, [], [x], tol=TOL, paths=("layer", "inplace", "net"))


@pytest.mark.parametrize("axis", [1, -1])
def test_softmax_old_param_rejected(axis):
    x = np.ones((2, 3, 4), np.float32)
    ref_ret, _ = run_ncnn(make_param("Softmax", {0: axis}, [x.shape]), b"", [x])
    ret, _ = run_layer("Softmax", {0: axis}, [], [x])
    assert ref_ret != 0 and ret != 0


def test_softmax_large_values_stay_finite():
    x = np.array([1000.0, 999.0, -1000.0, 0.0], np.float32)
    check_layer("Softmax", {}, [], [x], tol=TOL)


def _concat_parts(shape, axis, sizes, g):
    parts = []
    for n in sizes:
        s = list(shape)
        s[axis] = n
        parts.append(randn(g, tuple(s)))
    return parts


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_concat_axes(shape):
    dims = len(shape)
    for axis in range(-dims, dims):
        for sizes in [(3, 5), (1, 2, 6)]:
            parts = _concat_parts(shape, axis % dims, sizes, rng("concat", shape, axis, sizes))
            check_layer("Concat", {0: axis}, [], parts, tol=TOL)


def test_concat_squeezenet_form():
    g = rng("concat-sqz")
    check_layer("Concat", {}, [], [randn(g, (64, 56, 56)), randn(g, (64, 56, 56))], tol=TOL)


def test_concat_mismatch_fails():
    ret, _ = run_layer("Concat", {0: 0}, [], [np.ones((2, 3, 4), np.float32), np.ones((2, 5, 4), np.float32)])
    assert ret != 0


@pytest.mark.parametrize("n_out", [1, 2, 3])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_split(shape, n_out):
    x = randn(rng("split", shape, n_out), shape)
    check_layer("Split", {}, [], [x], n_outputs=n_out, tol=TOL)


def test_split_shares_storage():
    from oracle import default_option

    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat

    layer = create_layer_cpu("Split")
    assert not layer.one_blob_only and not layer.support_inplace
    bottom = Mat(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    tops = [Mat(), Mat()]
    assert layer.forward([bottom], tops, default_option()) == 0
    assert all(t.data_ptr() == bottom.data_ptr() for t in tops)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_input_passes_through(shape):
    x = randn(rng("input", shape), shape)
    # a Dropout of scale 1 after the Input is a no-op in both, so the output is the input
    check_layer("Dropout", {}, [], [x], tol=0.0, paths=("net",))
    ret, outs = run_layer("Input", {0: 7, 1: 5, 11: 3, 2: 2}, [], [x])
    assert ret == 0 and np.array_equal(outs[0], x)


def test_input_params():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Input")
    pd = ParamDict()
    for k, v in {0: 7, 1: 5, 11: 3, 2: 2}.items():
        pd.set(k, v)
    assert layer.load_param(pd) == 0
    assert (layer.w, layer.h, layer.d, layer.c) == (7, 5, 3, 2)
    assert layer.one_blob_only and layer.support_inplace


def test_layer_flags():
    from ncnn_c.layer import create_layer_cpu

    expected = {
        "Input": (True, True),
        "Convolution": (True, False),
        "ReLU": (True, True),
        "Pooling": (True, False),
        "Concat": (False, False),
        "Split": (False, False),
        "Dropout": (True, True),
        "Softmax": (True, True),
    }
    for name, (one_blob, inplace) in expected.items():
        layer = create_layer_cpu(name)
        assert type(layer).__name__ == name and layer.type == name
        assert (layer.one_blob_only, layer.support_inplace) == (one_blob, inplace), name
