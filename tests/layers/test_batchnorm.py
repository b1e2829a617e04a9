"""BatchNorm: per ncnn channel index (1-D elements, 2-D rows, 3-D/4-D channels; counts that pack by 4
and not), eps, zero variance, the non-light net. One case list, every backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    SHAPES_ALL,
    backends,
    check,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_net_gpu,
)

PATHS = ("layer", "inplace", "net")
# every rank, plus channel counts that pack by 4 (and one that packs to a single element)
SHAPES = SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5), (12,), (8, 3), (8, 1, 1)]


def _weights(g, n, var=None):
    slope, mean, bias = randn(g, (n,)), randn(g, (n,)), randn(g, (n,))
    if var is None:
        var = g.uniform(0.05, 3.0, n).astype(np.float32)
    return [(slope, 1), (mean, 1), (var, 1), (bias, 1)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.1])
@pytest.mark.parametrize("backend", backends("BatchNorm"))
def test_batchnorm(shape, eps, backend):
    g = rng("batchnorm", shape, eps)
    n = shape[0]
    x = randn(g, shape, 2.0)
    check(backend, "BatchNorm", {0: n, 1: eps}, _weights(g, n), [x], paths=PATHS)


@pytest.mark.parametrize("shape", [(3, 5, 7), (8, 5, 7)], ids=str)
@pytest.mark.parametrize("backend", backends("BatchNorm"))
def test_batchnorm_zero_variance_is_sanitised(shape, backend):
    # sqrt(var + eps) == 0 would divide by zero; ncnn substitutes 1e-4
    g = rng("batchnorm-zero", shape)
    n = shape[0]
    var = np.tile(np.array([0.0, 1.0], np.float32), n)[:n]
    x = randn(g, shape)
    weights = _weights(g, n, var)
    check(backend, "BatchNorm", {0: n}, weights, [x], paths=PATHS)
    ret, (y,) = run_layer("BatchNorm", {0: n}, weights, [x])
    assert ret == 0 and np.all(np.isfinite(y))


@pytest.mark.parametrize("backend", backends("BatchNorm"))
def test_not_in_place(backend):
    # the net's non-light mode keeps the bottom: the layer must write a new blob
    g = rng("bn-nl")
    check(
        backend, "BatchNorm", {0: 8}, _weights(g, 8), [randn(g, (8, 5, 7))], paths=("net",), lightmode=False
    )


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


@pytest.mark.gpu
def test_batchnorm_wrong_channels_on_the_gpu(caplog):
    g = rng("batchnorm-bad-vk")
    x = randn(g, (8, 3, 3))
    text = make_param("BatchNorm", {0: 4}, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin(_weights(g, 4)), [x], 1, **GPU_GRID["fp16s-pack"])
    assert ret != 0 and "BatchNorm" in caplog.text
