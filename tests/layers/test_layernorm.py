"""LayerNorm against the PyPI ncnn oracle: every dims and slice rule, packed channels, affine
on/off, segments long enough to be chunked on the GPU, large offsets, bad sizes. One case list,
every backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _norm_check import check_norm
from oracle import GPU_GRID, backends, make_bin, make_param, randn, rng, run_layer, run_net_gpu

# exact fp32 sets for the large offsets, which fp16 cannot hold to the spread's precision
FP32 = ["fp32", "fp32-pack"]


def layernorm_case(shape, affine_size, affine=1, eps=None, offset=0.0):
    """(params, weights, inputs) of a LayerNorm over a random ``shape`` input."""
    g = rng("layernorm", shape, affine_size, affine, eps)
    x = randn(g, shape, 2.0) + np.float32(offset)
    params = {0: affine_size, 2: affine}
    if eps is not None:
        params[1] = eps
    weights = [(randn(g, (affine_size,)), 1), (randn(g, (affine_size,)), 1)] if affine else []
    return params, weights, [x]


def check(backend, params, weights, inputs):
    one_value = inputs[0].shape[-1] == 1 and params[0] == 1
    return check_norm(backend, "LayerNorm", params, weights, inputs, one_value)


# (shape, affine_size): each dims with every slice rule ncnn has for it
CASES = [
    ((1,), 1),
    ((7,), 7),
    ((64,), 64),
    ((3000,), 3000),  # three chunks on the GPU
    ((1, 5), 5),
    ((7, 13), 13),
    ((16, 32), 32),
    ((1, 1, 1), 1),
    ((3, 7, 13), 13),  # rows
    ((3, 7, 13), 91),  # whole channels
    ((8, 5, 7), 7),  # packed channels
    ((8, 5, 7), 35),
    ((16, 8, 8), 8),
    ((16, 8, 8), 64),
    ((3, 227, 227), 227),
    pytest.param((3, 227, 227), 227 * 227, marks=pytest.mark.slow, id="(3, 227, 227)-51529"),
    ((2, 3, 5, 7), 7),  # rows
    ((2, 3, 5, 7), 35),  # depth planes
    ((2, 3, 5, 7), 105),  # whole channels
    ((8, 3, 5, 7), 35),
    ((4, 1, 6, 6), 6),
    ((4, 1, 6, 6), 36),
]


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape,affine_size", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("LayerNorm"))
def test_layernorm(shape, affine_size, affine, backend):
    check(backend, *layernorm_case(shape, affine_size, affine))


# large offsets, where a one-pass variance would lose the spread
@pytest.mark.parametrize("eps", [1e-6, 0.25])
@pytest.mark.parametrize("shape,affine_size,offset", [((4, 9, 11), 11, 30.0), ((12, 48), 48, -30.0)], ids=str)
@pytest.mark.parametrize("backend", backends("LayerNorm", grid=FP32))
def test_layernorm_eps_and_offset(shape, affine_size, offset, eps, backend):
    check(backend, *layernorm_case(shape, affine_size, 1, eps, offset))


@pytest.mark.parametrize("shape,affine_size", [((3, 5, 6), 0), ((2, 3, 5, 6), 30)], ids=str)
@pytest.mark.parametrize("backend", backends("LayerNorm"))
def test_layernorm_without_affine_ignores_a_stale_size(shape, affine_size, backend):
    # affine=0 reads no weights; a 3-D slice is then a row only when affine_size == w
    check(backend, *layernorm_case(shape, affine_size, 0))


@pytest.mark.parametrize(
    "shape,affine_size", [((7,), 6), ((4, 9), 3), ((3, 4, 5), 7), ((2, 3, 4, 5), 7)], ids=str
)
def test_layernorm_rejects_mismatched_affine_size(shape, affine_size, caplog):
    g = rng("ln-bad", shape)
    x = randn(g, shape)
    weights = [(randn(g, (affine_size,)), 1), (randn(g, (affine_size,)), 1)]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("LayerNorm", {0: affine_size, 2: 1}, weights, [x])
    assert ret != 0
    assert "affine_size" in caplog.text


@pytest.mark.gpu
def test_layernorm_rejects_mismatched_affine_size_on_the_gpu(caplog):
    g = rng("ln-bad-vk")
    weights = [(randn(g, (7,)), 1), (randn(g, (7,)), 1)]
    x = randn(g, (8, 4, 5))
    text = make_param("LayerNorm", {0: 7}, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin(weights), [x], 1, **GPU_GRID["fp16s-pack"])
    assert ret != 0 and "affine_size 7 does not match" in caplog.text
