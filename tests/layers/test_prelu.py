"""PReLU: one shared slope or one per ncnn channel index (1-D elements, 2-D rows, 3-D/4-D channels)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer

PATHS = ("layer", "inplace", "net")


@pytest.mark.parametrize("shape", SHAPES_ALL)
@pytest.mark.parametrize("per_channel", [False, True])
def test_prelu(shape, per_channel):
    g = rng("prelu", shape, per_channel)
    n = shape[0] if per_channel else 1
    slopes = randn(g, (n,))
    x = randn(g, shape, 3.0)
    check_layer("PReLU", {0: n}, [(slopes, 1)], [x], tol=0.0, paths=PATHS)


def test_prelu_more_slopes_than_channels_uses_the_first():
    # ncnn indexes the slope table by channel and never looks past the blob's channel count
    g = rng("prelu-extra")
    x = randn(g, (3, 4, 5))
    check_layer("PReLU", {0: 6}, [(randn(g, (6,)), 1)], [x], tol=0.0, paths=PATHS)


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
