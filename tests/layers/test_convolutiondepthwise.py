"""ConvolutionDepthWise against the PyPI ncnn oracle: depthwise (group == channels, the native
kernel's 3x3 stride 1/2 and generic paths, and the numpy fallback), grouped (batched matmul),
group 1, channel multipliers, every padding form and activation, dynamic weights, bad inputs.
"""

from __future__ import annotations

import logging

import ncnn  # noqa: F401  (the oracle must be installed)
import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

TOL = 1e-5


def dw_case(params, c, h, w, bias=True, scale=1.0, **kw):
    g = rng("dw", sorted(params.items()), c, h, w, bias)
    kwid = params[1]
    kh = params.get(11, kwid)
    n, group = params[0], params.get(7, 1)
    weight = randn(g, (n * (c // group) * kh * kwid,), 1.0 / np.sqrt(c // group * kh * kwid))
    p = {**params, 5: int(bias), 6: weight.size}
    weights = [(weight, 0)] + ([(randn(g, (n,)), 1)] if bias else [])
    return check_layer("ConvolutionDepthWise", p, weights, [randn(g, (c, h, w), scale)], tol=TOL, **kw)


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
def test_depthwise_geometry(geom, bias):
    params, c, h, w = geom
    dw_case({0: c, 7: c, 9: 1, **params}, c, h, w, bias)


@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
def test_depthwise_numpy_fallback(geom, numpy_only):
    params, c, h, w = geom
    dw_case({0: c, 7: c, 9: 1, **params}, c, h, w)


ACTIVATIONS = [(0, None), (1, None), (2, [0.1]), (3, [-0.5, 0.7]), (4, None), (5, None), (6, [0.2, 0.5])]


@pytest.mark.parametrize("act", ACTIVATIONS, ids=lambda a: f"act{a[0]}")
def test_depthwise_activation(act):
    kind, values = act
    p = {0: 6, 1: 3, 4: 1, 7: 6, 9: kind}
    if values is not None:
        p[10] = values
    dw_case(p, 6, 8, 9, scale=6.0)  # depthwise
    dw_case({**p, 0: 4, 7: 2}, 6, 8, 9, scale=6.0)  # grouped


@pytest.mark.parametrize(
    "c,n,group,params",
    [
        (6, 6, 3, {1: 3, 4: 1}),  # 2 in, 2 out per group
        (12, 6, 3, {1: 3, 3: 2, 4: 1}),  # 4 in, 2 out per group
        (6, 12, 3, {1: 1}),  # ShuffleNet's grouped 1x1
        (9, 9, 3, {1: 1, 3: 2}),  # grouped 1x1 strided
        (4, 8, 4, {1: 3, 4: 1}),  # channel multiplier 2 (group == channels != num_output)
        (5, 7, 1, {1: 3, 4: 1}),  # group 1: a plain convolution
        (6, 6, 2, {1: 3, 4: -233, 18: -1.0}),
    ],
    ids=str,
)
def test_grouped(c, n, group, params):
    dw_case({0: n, 7: group, **params}, c, 11, 9)


@pytest.mark.parametrize("shape", [(3, 7, 13), (16, 8, 8), (3, 227, 227), (32, 112, 112)], ids=str)
def test_depthwise_shapes(shape):
    c, h, w = shape
    dw_case({0: c, 1: 3, 4: 1, 7: c, 9: 1}, c, h, w)
    dw_case({0: c, 1: 3, 3: 2, 4: 1, 7: c, 9: 1}, c, h, w)


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
