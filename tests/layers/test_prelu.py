"""PReLU: one shared slope or one per ncnn channel index (1-D elements, 2-D rows, 3-D/4-D channels;
counts that pack by 4 and not). One case list, every backend (oracle.backends)."""

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
# x or x * slope: one rounding at most, exact on every fp32 backend
EXACT = dict(tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("backend", backends("PReLU"))
def test_prelu(shape, per_channel, backend):
    g = rng("prelu", shape, per_channel)
    n = shape[0] if per_channel else 1
    slopes = randn(g, (n,))
    x = randn(g, shape, 3.0)
    check(backend, "PReLU", {0: n}, [(slopes, 1)], [x], paths=PATHS, **EXACT)


@pytest.mark.parametrize("backend", backends("PReLU"))
def test_prelu_more_slopes_than_channels_uses_the_first(backend):
    # ncnn indexes the slope table by channel and never looks past the blob's channel count
    g = rng("prelu-extra")
    x = randn(g, (3, 4, 5))
    check(backend, "PReLU", {0: 6}, [(randn(g, (6,)), 1)], [x], paths=PATHS, **EXACT)


def test_prelu_fp32_weights_only():
    x = randn(rng("prelu-w"), (2, 3, 3))
    slopes = np.array([0.25, -0.5], np.float32)
    ret, (y,) = run_layer("PReLU", {0: 2}, [(slopes, 1)], [x])
    assert ret == 0
    expect = np.where(x < 0, x * slopes[:, None, None], x)
    assert np.array_equal(y, expect)


def test_prelu_too_few_slopes(caplog):
    x = np.ones((4, 3, 3), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("PReLU", {0: 3}, [(np.ones(3, np.float32), 1)], [x])
    assert ret != 0 and "3 slopes for a 3-D blob of 4 channels" in caplog.text


def test_prelu_needs_slopes(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("PReLU", {}, [], [np.ones(4, np.float32)])
    assert ret != 0 and "num_slope 0" in caplog.text


def test_prelu_short_weight_blob(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("PReLU", {0: 4}, [(np.ones(2, np.float32), 1)], [np.ones((4, 2, 2), np.float32)])
    assert ret != 0 and "could not load 4 slope" in caplog.text


@pytest.mark.gpu
def test_prelu_too_few_slopes_on_the_gpu(caplog):
    g = rng("prelu-bad-vk")
    x = randn(g, (8, 3, 3))
    text = make_param("PReLU", {0: 4}, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin([(randn(g, (4,)), 1)]), [x], 1, **GPU_GRID["fp16s-pack"])
    assert ret != 0 and "4 slopes" in caplog.text
