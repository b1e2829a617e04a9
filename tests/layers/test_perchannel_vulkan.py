"""BatchNorm, Scale (stored and two-input), Bias and PReLU on the GPU (the shared
perchannel.comp) over the option grid against the PyPI ncnn CPU fp32 oracle: every dims,
channel counts divisible by 4 (packed) and not, scalar coefficients, bad shapes."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu

SHAPES = SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5), (12,), (8, 3), (8, 1, 1)]


def _n(shape):
    return shape[0]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_batchnorm(shape):
    g = rng("bn-vk", shape)
    n = _n(shape)
    slope, mean, bias = randn(g, (n,)), randn(g, (n,)), randn(g, (n,))
    var = g.uniform(0.1, 2.0, (n,)).astype(np.float32)
    var[0] = 0.0  # eps 0 and var 0: the CPU layer's 0.0001 guard
    weights = [(slope, 1), (mean, 1), (var, 1), (bias, 1)]
    check_layer_gpu("BatchNorm", {0: n, 1: 0.0 if n > 1 else 1e-3}, weights, [randn(g, shape)])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("bias_term", [0, 1])
def test_scale(shape, bias_term):
    g = rng("scale-vk", shape, bias_term)
    n = _n(shape)
    weights = [(randn(g, (n,)), 1)] + ([(randn(g, (n,)), 1)] if bias_term else [])
    params = {0: n, 1: bias_term} if bias_term else {0: n}
    check_layer_gpu("Scale", params, weights, [randn(g, shape)])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_scale_from_blob(shape):
    g = rng("scale-blob-vk", shape)
    x, s = randn(g, shape), randn(g, (shape[0],))
    check_layer_gpu("Scale", {0: -233}, [], [x, s])


def test_scale_from_2d_blob():
    # a (4, 2) scale blob: its packed rows interleave the scales, so it is converted before use
    g = rng("scale-blob2d-vk")
    x, s = randn(g, (8, 5, 7)), randn(g, (4, 2))
    check_layer_gpu("Scale", {0: -233}, [], [x, s])


def test_scale_from_blob_not_in_place():
    g = rng("scale-blob-nl")
    x, s = randn(g, (8, 5, 7)), randn(g, (8,))
    check_layer_gpu("Scale", {0: -233}, [], [x, s], lightmode=False)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_bias(shape):
    g = rng("bias-vk", shape)
    n = shape[0] if len(shape) >= 3 else 3
    check_layer_gpu("Bias", {0: n}, [(randn(g, (n,)), 1)], [randn(g, shape)])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("per_channel", [False, True])
def test_prelu(shape, per_channel):
    g = rng("prelu-vk", shape, per_channel)
    n = shape[0] if per_channel else 1
    slopes = g.uniform(-0.5, 0.5, (n,)).astype(np.float32)
    check_layer_gpu("PReLU", {0: n}, [(slopes, 1)], [randn(g, shape)])


def test_not_in_place():
    g = rng("bn-nl")
    n = 8
    weights = [(randn(g, (n,)), 1), (randn(g, (n,)), 1), (np.ones(n, np.float32), 1), (randn(g, (n,)), 1)]
    check_layer_gpu("BatchNorm", {0: n}, weights, [randn(g, (8, 5, 7))], lightmode=False)


def _run_gpu(layer_type, params, weights, inputs):
    from oracle import GPU_GRID, make_bin, make_param, run_net_gpu

    text = make_param(layer_type, params, [x.shape for x in inputs], 1)
    return run_net_gpu(text, make_bin(weights), inputs, 1, **GPU_GRID["fp16s-pack"])


@pytest.mark.parametrize(
    "shape, what", [((8, 2, 2), "3-D blob of 8"), ((5, 6), "2-D blob of 5"), ((9,), "1-D blob of 9")]
)
def test_scale_too_few_scales(shape, what, caplog):
    g = rng("scale-bad-vk", shape)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = _run_gpu("Scale", {0: 3}, [(randn(g, (3,)), 1)], [randn(g, shape)])
    assert ret != 0 and f"3 scales for a {what} channels" in caplog.text


def test_scale_from_blob_too_short(caplog):
    g = rng("scale-short-vk")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = _run_gpu("Scale", {0: -233}, [], [randn(g, (8, 3, 3)), randn(g, (4,))])
    assert ret != 0 and "4 scales for a 3-D blob of 8 channels" in caplog.text


def test_prelu_too_few_slopes(caplog):
    g = rng("prelu-bad-vk")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = _run_gpu("PReLU", {0: 4}, [(randn(g, (4,)), 1)], [randn(g, (8, 3, 3))])
    assert ret != 0 and "4 slopes" in caplog.text
