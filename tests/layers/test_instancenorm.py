"""InstanceNorm against the PyPI ncnn oracle: every dims, affine on/off, eps, bad blobs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _norm_check import check_norm
from oracle import SHAPES_ALL, randn, rng, run_layer


def instancenorm_case(shape, affine=1, eps=None, offset=0.0):
    """(params, weights, inputs) of an InstanceNorm over a random ``shape`` input (shared with
    test_norms_vulkan.py); 1-D and 2-D blobs are one channel."""
    g = rng("instancenorm", shape, affine, eps)
    x = randn(g, shape, 3.0) + np.float32(offset)
    c = shape[0] if len(shape) >= 3 else 1
    params = {0: c, 2: affine}
    if eps is not None:
        params[1] = eps
    weights = [(randn(g, (c,)), 1), (randn(g, (c,)), 1)] if affine else []
    return params, weights, [x]


def case(shape, affine=1, eps=None, offset=0.0):
    params, weights, inputs = instancenorm_case(shape, affine, eps, offset)
    return check_norm("InstanceNorm", params, weights, inputs, int(np.prod(shape)) // params[0] == 1)


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape", SHAPES_ALL, ids=str)
def test_instancenorm(shape, affine):
    case(shape, affine)


@pytest.mark.parametrize("eps", [1e-5, 0.5])
def test_instancenorm_eps_and_offset(eps):
    case((6, 9, 11), 1, eps=eps, offset=40.0)
    case((3, 2, 9, 11), 0, eps=eps, offset=-40.0)


def test_instancenorm_rejects_wrong_channels(caplog):
    x = randn(rng("in-bad"), (5, 4, 4))
    g = rng("in-bad-w")
    weights = [(randn(g, (4,)), 1), (randn(g, (4,)), 1)]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("InstanceNorm", {0: 4, 2: 1}, weights, [x])
    assert ret != 0
    assert "InstanceNorm" in caplog.text and "5 channels" in caplog.text
