"""ConvolutionDepthWise against the PyPI ncnn oracle: depthwise (group == channels, the native
kernel's 3x3 stride 1/2 and generic paths, the numpy fallback, the GPU's elempack 1 and 4),
grouped (batched matmul), group 1, channel multipliers, every padding form and activation,
each case on every backend (oracle.backends: the CPU, and the GPU option grid); then the CPU's
threads and dynamic weights, and bad inputs.
"""

from __future__ import annotations

import logging

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import pytest
from oracle import backends, check, check_layer, randn, rng, run_layer

TOL = 1e-5


def dw_case(params, c, h, w, bias=True, scale=1.0, backend="cpu", **kw):
    g = rng("dw", sorted(params.items()), c, h, w, bias)
    kwid = params[1]
    kh = params.get(11, kwid)
    n, group = params[0], params.get(7, 1)
    weight = randn(g, (n * (c // group) * kh * kwid,), 1.0 / np.sqrt(c // group * kh * kwid))
    p = {**params, 5: int(bias), 6: weight.size}
    weights = [(weight, 0)] + ([(randn(g, (n,)), 1)] if bias else [])
    return check(backend, "ConvolutionDepthWise", p, weights, [randn(g, (c, h, w), scale)], tol=TOL, **kw)


@pytest.fixture
def numpy_only(monkeypatch):
    import ncnn_c._native.cpu as cpu

    monkeypatch.setattr(cpu, "_kernels", None)
    monkeypatch.setattr(cpu, "_tried", True)


GEOMETRY = [
    ({1: 3, 4: 1}, 8, 15, 13),  # 3x3 stride 1
    ({1: 3, 3: 2, 4: 1}, 8, 15, 13),  # 3x3 stride 2, narrow rows
    ({1: 3, 3: 2, 4: 1}, 4, 40, 41),  # 3x3 stride 2, rows of 20+
    ({1: 3}, 6, 7, 7),  # unpadded
    ({1: 5, 2: 2, 3: 2, 4: 2}, 5, 17, 19),  # dilated 5x5
    ({1: 3, 11: 1, 3: 1, 13: 2, 4: 1}, 3, 9, 12),  # rectangular kernel, unequal strides
    ({1: 2, 3: 3, 2: 2}, 3, 14, 9),  # even kernel, stride 3
    ({1: 3, 4: 1, 15: 2, 14: 0, 16: 3, 18: 0.5}, 3, 8, 9),  # four pads and a pad_value
    ({1: 3, 4: -233}, 4, 9, 10),  # SAME_UPPER
    ({1: 4, 3: 2, 4: -234}, 4, 9, 10),  # SAME_LOWER, odd total pad
    ({1: 3, 4: 1}, 1, 1, 1),  # the smallest blob
    ({1: 1}, 5, 7, 3),  # 1x1 depthwise is a per-channel scale
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise"))
def test_depthwise_geometry(geom, bias, backend):
    params, c, h, w = geom
    dw_case({0: c, 7: c, 9: 1, **params}, c, h, w, bias, backend=backend)


@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
def test_depthwise_numpy_fallback(geom, numpy_only):
    params, c, h, w = geom
    dw_case({0: c, 7: c, 9: 1, **params}, c, h, w)


ACTIVATIONS = [(0, None), (1, None), (2, [0.1]), (3, [-0.5, 0.7]), (4, None), (5, None), (6, [0.2, 0.5])]
# (channels, h, w, num_output, group): depthwise and grouped, unpacked and packed on the GPU
ACT_LAYOUTS = [(6, 8, 9, 6, 6), (6, 8, 9, 4, 2), (8, 9, 11, 8, 8), (12, 7, 9, 6, 3)]


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: f"act{a[0]}")
@pytest.mark.parametrize("layout", ACT_LAYOUTS, ids=str)
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise"))
def test_depthwise_activation(act, layout, backend):
    kind, values = act
    c, h, w, n, group = layout
    p = {0: n, 1: 3, 4: 1, 7: group, 9: kind}
    if values is not None:
        p[10] = values
    # a wide input range reaches every branch of Clip, HardSwish and the sigmoid clamp
    dw_case(p, c, h, w, scale=6.0, backend=backend)


GROUPED = [
    # (c, num_output, group, params) over an 11x9 input
    (6, 6, 3, {1: 3, 4: 1}),  # 2 in, 2 out per group
    (12, 6, 3, {1: 3, 3: 2, 4: 1}),  # 4 in, 2 out per group
    (6, 12, 3, {1: 1}),  # ShuffleNet's grouped 1x1
    (9, 9, 3, {1: 1, 3: 2}),  # grouped 1x1 strided
    (4, 8, 4, {1: 3, 4: 1}),  # channel multiplier 2 (group == channels != num_output)
    (5, 7, 1, {1: 3, 4: 1}),  # group 1: a plain convolution
    (6, 6, 2, {1: 3, 4: -233, 18: -1.0}),
]


@pytest.mark.parametrize("case", GROUPED, ids=str)
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise"))
def test_grouped(case, backend):
    c, n, group, params = case
    dw_case({0: n, 7: group, **params}, c, 11, 9, backend=backend)


# every geometry form over depthwise layers with channels divisible by 4 (elempack 4 on the
# GPU) and not, grouped layers with 4-divisible and odd per-group counts, and a channel multiplier
LAYOUTS = [((8, 9, 11), 8, 8), ((3, 11, 13), 3, 3), ((12, 7, 9), 6, 3), ((6, 10, 7), 6, 2), ((4, 9, 9), 8, 4)]
LAYOUT_GEOMETRIES = [
    {1: 3, 4: 1},
    {1: 3, 3: 2, 4: 1},
    {1: 1},
    {1: 3, 2: 2, 4: 2},
    {1: 5, 3: 2, 4: -233},
    {1: 4, 3: 2, 4: -234, 18: 0.25},
    {1: 3, 11: 1, 12: 1, 2: 2, 13: 2, 4: 0, 15: 2, 14: 1, 16: 0, 18: -0.5},
]


@pytest.mark.parametrize("geometry", LAYOUT_GEOMETRIES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise"))
def test_layouts(geometry, layout, backend):
    (c, h, w), n, group = layout
    dw_case({**geometry, 0: n, 7: group}, c, h, w, backend=backend)


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise"))
def test_layouts_no_bias(layout, backend):
    (c, h, w), n, group = layout
    dw_case({1: 3, 4: 1, 0: n, 7: group}, c, h, w, bias=False, backend=backend)


# the shapes of real networks, odd sizes, 1-pixel planes and several GPU row tiles per row
SHAPES = [(3, 7, 13), (16, 8, 8), (3, 227, 227), (32, 112, 112)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise"))
def test_depthwise_shapes(shape, stride, backend):
    c, h, w = shape
    dw_case({0: c, 1: 3, 3: stride, 4: 1, 7: c, 9: 1}, c, h, w, backend=backend)


@pytest.mark.parametrize(
    "case", [((32, 57, 61), 32, 32), ((24, 1, 1), 24, 24), ((18, 15, 17), 36, 3)], ids=str
)
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise"))
def test_larger(case, backend):
    (c, h, w), n, group = case
    dw_case({1: 3, 4: 1, 0: n, 7: group, 9: 1}, c, h, w, backend=backend)


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_depthwise_threads(threads):
    # the native kernel splits channels over threads past a work threshold
    dw_case({0: 64, 1: 3, 4: 1, 7: 64, 9: 1}, 64, 56, 56, num_threads=threads)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("group", [4, 2])
def test_dynamic_weight(group, bias):
    # 19=1: weight blob (w=kw, h=kh, d=num_input/group, c=num_output) and bias come as inputs
    g = rng("dw-dyn", group, bias)
    x = randn(g, (4, 9, 11))
    weight = randn(g, (4, 4 // group, 3, 3))
    inputs = [x, weight] + ([randn(g, (4,))] if bias else [])
    params = {0: 4, 1: 3, 4: 1, 5: int(bias), 6: weight.size, 7: group, 9: 1, 19: 1}
    check_layer("ConvolutionDepthWise", params, [], inputs)


def test_rejects_channels_not_matching_group(caplog):
    # 6 channels, group 4: not a whole number of channels per group
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "ConvolutionDepthWise",
            {0: 4, 1: 3, 6: 36, 7: 4},
            [(np.ones(36, np.float32), 0)],
            [np.ones((6, 5, 5), np.float32)],
        )
    assert ret != 0
    assert "input channels" in caplog.text


@pytest.mark.parametrize(
    "params,msg",
    [
        ({0: 6, 1: 3, 6: 54, 7: 4}, "not a multiple of group"),
        ({0: 6, 1: 3, 6: 54, 7: 0}, "group must be positive"),
        ({0: 6, 1: 3, 6: 50, 7: 6}, "weight_data_size"),
        ({0: 6, 1: 3, 6: 54, 7: 6, 8: 1}, "int8"),
    ],
    ids=str,
)
def test_rejects_bad_params(params, msg, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "ConvolutionDepthWise", params, [(np.ones(54, np.float32), 0)], [np.ones((6, 5, 5), np.float32)]
        )
    assert ret != 0
    assert msg in caplog.text


@pytest.mark.parametrize("shape", [(6, 5), (6,), (1, 6, 5, 5)], ids=str)
def test_rejects_bad_dims(shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "ConvolutionDepthWise",
            {0: 6, 1: 3, 6: 54, 7: 6},
            [(np.ones(54, np.float32), 0)],
            [np.ones(shape, np.float32)],
        )
    assert ret != 0
    assert "3-D" in caplog.text
