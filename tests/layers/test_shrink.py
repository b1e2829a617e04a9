"""Shrink against the PyPI ncnn (exact, tol 0): the shapes and (bias, lambd) pairs of ncnn's
tests/test_shrink.cpp (every rank), the defaults, values on the thresholds, the layer /
in-place / net paths, and a Vulkan net (ncnn has a GPU form; ours runs the layer on the CPU
inside the Vulkan net). Between the thresholds ncnn gives 0, not x as its operator table says."""

from __future__ import annotations

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, randn, rng

PATHS = ("layer", "inplace", "net")

# (numpy shape, bias, lambd) of ncnn's cases
CASES = [
    ((3, 8, 24, 12), 0.0, 5.0), ((4, 16, 7, 9), 0.3, 0.3), ((3, 4, 9, 6), 4.5, 6.1),
    ((24, 6, 12), 0.0, 5.0), ((24, 8, 7), 0.3, 0.3), ((5, 4, 3), 4.5, 6.1),
    ((7, 5), 0.0, 0.3), ((9, 7), 4.0, 4.0), ((5, 3), 2.0, 4.0),
    ((25,), 0.0, 0.3), ((63,), 4.0, 4.0), ((1024,), 2.0, 4.0),
]  # fmt: skip


@pytest.mark.parametrize("shape,bias,lambd", CASES, ids=str)
def test_shrink(shape, bias, lambd):
    x = randn(rng("shrink", shape, bias, lambd), shape, 5.0)
    check_layer("Shrink", {0: bias, 1: lambd}, [], [x], paths=PATHS, tol=0.0)


def test_shrink_defaults_and_thresholds():
    x = np.array(
        [-1.0, -0.5, -0.49999997, 0.0, 0.49999997, 0.5, 0.50000006, 1.0, np.inf, -np.inf], np.float32
    )
    check_layer("Shrink", {}, [], [x], paths=PATHS, tol=0.0)
    check_layer("Shrink", {0: 0.25, 1: -0.5}, [], [x], paths=PATHS, tol=0.0)  # a negative lambd


@pytest.mark.gpu
def test_shrink_in_vulkan_net():
    x = randn(rng("shrink-vk"), (6, 9, 11), 5.0)
    check_in_vulkan_net("Shrink", {0: 0.3, 1: 0.7}, [], [x], tol=0.0)
