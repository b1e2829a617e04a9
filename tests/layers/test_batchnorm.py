"""BatchNorm: per ncnn channel index (1-D elements, 2-D rows, 3-D/4-D channels), eps, zero variance."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer

PATHS = ("layer", "inplace", "net")


def _weights(g, n, var=None):
    slope, mean, bias = randn(g, (n,)), randn(g, (n,)), randn(g, (n,))
    if var is None:
        var = g.uniform(0.05, 3.0, n).astype(np.float32)
    return [(slope, 1), (mean, 1), (var, 1), (bias, 1)]


@pytest.mark.parametrize("shape", SHAPES_ALL)
@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.1])
def test_batchnorm(shape, eps):
    g = rng("batchnorm", shape, eps)
    n = shape[0]
    x = randn(g, shape, 2.0)
    check_layer("BatchNorm", {0: n, 1: eps}, _weights(g, n), [x], paths=PATHS)


def test_batchnorm_zero_variance_is_sanitised():
    # sqrt(var + eps) == 0 would divide by zero; ncnn substitutes 1e-4
    g = rng("batchnorm-zero")
    var = np.array([0.0, 1.0, 0.0], np.float32)
    x = randn(g, (3, 5, 7))
    check_layer("BatchNorm", {0: 3}, _weights(g, 3, var), [x], paths=PATHS)
    ret, (y,) = run_layer("BatchNorm", {0: 3}, _weights(g, 3, var), [x])
    assert ret == 0 and np.all(np.isfinite(y))


def test_batchnorm_wrong_channels(caplog):
    g = rng("batchnorm-bad")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("BatchNorm", {0: 2}, _weights(g, 2), [np.ones((3, 4, 4), np.float32)])
    assert ret != 0 and "2 channels for a 3-D blob of 3 channels" in caplog.text


def test_batchnorm_missing_weights(caplog):
    g = rng("batchnorm-missing")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("BatchNorm", {0: 3}, _weights(g, 3)[:3], [np.ones((3, 4, 4), np.float32)])
    assert ret != 0 and "bias" in caplog.text
