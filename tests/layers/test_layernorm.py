"""LayerNorm against the PyPI ncnn oracle: every dims and slice rule, affine on/off, bad sizes.

The case list and builders are shared with test_norms_vulkan.py."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _norm_check import check_norm
from oracle import randn, rng, run_layer

# -- the cases, shared with test_norms_vulkan.py -------------------------------------------------


def layernorm_case(shape, affine_size, affine=1, eps=None, offset=0.0):
    """(params, weights, inputs) of a LayerNorm over a random ``shape`` input."""
    g = rng("layernorm", shape, affine_size, affine, eps)
    x = randn(g, shape, 2.0) + np.float32(offset)
    params = {0: affine_size, 2: affine}
    if eps is not None:
        params[1] = eps
    weights = [(randn(g, (affine_size,)), 1), (randn(g, (affine_size,)), 1)] if affine else []
    return params, weights, [x]


def eps_and_offset_cases(eps):
    """Large offsets, where a one-pass variance would lose the spread."""
    return [layernorm_case((4, 9, 11), 11, 1, eps, 30.0), layernorm_case((12, 48), 48, 1, eps, -30.0)]


# (shape, affine_size): each dims with every slice rule ncnn has for it
CASES = [
    ((1,), 1),
    ((7,), 7),
    ((64,), 64),
    ((1, 5), 5),
    ((7, 13), 13),
    ((16, 32), 32),
    ((1, 1, 1), 1),
    ((3, 7, 13), 13),  # rows
    ((3, 7, 13), 91),  # whole channels
    ((16, 8, 8), 8),
    ((16, 8, 8), 64),
    ((3, 227, 227), 227),
    ((2, 3, 5, 7), 7),  # rows
    ((2, 3, 5, 7), 35),  # depth planes
    ((2, 3, 5, 7), 105),  # whole channels
    ((4, 1, 6, 6), 6),
    ((4, 1, 6, 6), 36),
]
EPS_VALUES = [1e-6, 0.25]


# -- the CPU tests -------------------------------------------------------------------------------


def check(params, weights, inputs):
    return check_norm("LayerNorm", params, weights, inputs, inputs[0].shape[-1] == 1 and params[0] == 1)


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape,affine_size", CASES, ids=str)
def test_layernorm(shape, affine_size, affine):
    check(*layernorm_case(shape, affine_size, affine))


@pytest.mark.parametrize("eps", EPS_VALUES)
def test_layernorm_eps_and_offset(eps):
    for case in eps_and_offset_cases(eps):
        check(*case)


def test_layernorm_without_affine_ignores_a_stale_size():
    # affine=0 reads no weights; a 3-D slice is then a row only when affine_size == w
    check(*layernorm_case((3, 5, 6), 0, 0))
    check(*layernorm_case((2, 3, 5, 6), 30, 0))


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
