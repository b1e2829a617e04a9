"""Softplus against the PyPI ncnn: the shapes of ncnn's tests/test_softplus.cpp (every rank),
the layer / in-place / net paths, exp's overflow range, and a Vulkan net (ncnn has a GPU
form; ours runs the layer on the CPU inside the Vulkan net)."""

from __future__ import annotations

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, randn, rng

PATHS = ("layer", "inplace", "net")

# numpy shapes of ncnn's RandomMat(w, h[, d], c) cases
SHAPES = [
    (24, 7, 6, 5), (12, 9, 8, 7), (13, 5, 4, 3),
    (24, 7, 5), (12, 9, 7), (13, 5, 3),
    (24, 15), (12, 17), (15, 19),
    (128,), (124,), (127,),
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softplus(shape):
    x = randn(rng("softplus", shape), shape, 4.0)
    check_layer("Softplus", {}, [], [x], paths=PATHS)


def test_softplus_extremes():
    # exp overflows to inf past ~88.7 (so does the result), the sum rounds to 1 far below 0
    x = np.array([-1000, -100, -90, -20, -1e-3, 0, 1e-3, 20, 80, 88.5, 89, 100, 1000], np.float32)
    check_layer("Softplus", {}, [], [x], paths=PATHS)


@pytest.mark.gpu
def test_softplus_in_vulkan_net():
    x = randn(rng("softplus-vk"), (6, 9, 11), 4.0)
    check_in_vulkan_net("Softplus", {}, [], [x])
