"""Bias: one value per Mat channel (a 1-D or 2-D blob is one channel: bias[0] everywhere), channel
counts that pack by 4 and not. One case list, every backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, backends, check, randn, rng, run_layer

PATHS = ("layer", "inplace", "net")


# every rank, plus channel counts that pack by 4 (and one that packs to a single element)
SHAPES = SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5), (12,), (8, 3), (8, 1, 1)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Bias"))
def test_bias(shape, backend):
    g = rng("bias", shape)
    c = shape[0] if len(shape) >= 3 else 1
    x = randn(g, shape)
    check(backend, "Bias", {0: c}, [(randn(g, (c,)), 1)], [x], tol=0.0, paths=PATHS)


@pytest.mark.parametrize("shape", [(7,), (5, 6), (12,), (8, 3)], ids=str)
@pytest.mark.parametrize("backend", backends("Bias"))
def test_bias_low_dims_use_the_first_value(shape, backend):
    g = rng("bias-low", shape)
    bias = randn(g, (4,))
    x = randn(g, shape)
    check(backend, "Bias", {0: 4}, [(bias, 1)], [x], tol=0.0, paths=PATHS)
    ret, (y,) = run_layer("Bias", {0: 4}, [(bias, 1)], [x])
    assert ret == 0 and np.array_equal(y, x + bias[0])


def test_bias_too_few(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Bias", {0: 2}, [(np.ones(2, np.float32), 1)], [np.ones((3, 2, 2), np.float32)])
    assert ret != 0 and "2 biases for a blob of 3 channels" in caplog.text


def test_bias_size_zero(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Bias", {}, [], [np.ones((3, 2, 2), np.float32)])
    # refused by the param table, naming the param id
    assert ret != 0 and "param 0 (bias_data_size) = 0" in caplog.text
