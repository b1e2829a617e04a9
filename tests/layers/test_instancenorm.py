"""InstanceNorm against the PyPI ncnn oracle: every dims, affine on/off, eps, bad blobs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, make_bin, make_param, randn, rng, run_layer, run_ncnn

PATHS = ("layer", "inplace", "net")


def case(shape, affine=1, eps=None, offset=0.0):
    g = rng("instancenorm", shape, affine, eps)
    x = randn(g, shape, 3.0) + np.float32(offset)
    c = shape[0] if len(shape) >= 3 else 1
    params = {0: c, 2: affine}
    if eps is not None:
        params[1] = eps
    weights = [(randn(g, (c,)), 1), (randn(g, (c,)), 1)] if affine else []
    if int(np.prod(shape)) // c == 1:
        # a one-value channel normalises to exactly 0 (then beta); ncnn's fused multiply-add
        # leaves a rounding residue of ~1e-6, so compare absolutely
        ret, ref = run_ncnn(make_param("InstanceNorm", params, [shape]), make_bin(weights), [x])
        assert ret == 0
        ret, got = run_layer("InstanceNorm", params, weights, [x])
        assert ret == 0
        np.testing.assert_allclose(got[0], ref[0], rtol=0, atol=1e-5)
        return None
    return check_layer("InstanceNorm", params, weights, [x], paths=PATHS)


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
