"""StatisticsPooling against the PyPI ncnn: ncnn's tests/test_statisticspooling.cpp cases
(4-D blobs, with and without the deviation), the same over 1-D to 3-D blobs, the layer and
net paths, and a Vulkan net (ncnn has no GPU form: the Vulkan net runs it on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, randn, rng

PATHS = ("layer", "net")

SHAPES = [(3, 3, 4, 5), (8, 2, 3, 3), (7,), (7, 13), (1, 1, 1), (3, 7, 13), (16, 8, 8), (3, 227, 227)]


@pytest.mark.parametrize("include_stddev", [0, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_statisticspooling(shape, include_stddev):
    x = randn(rng("statpool", shape), shape, 2.0) + np.float32(1.0)
    check_layer("StatisticsPooling", {0: include_stddev}, [], [x], paths=PATHS)


def test_statisticspooling_defaults():
    check_layer("StatisticsPooling", {}, [], [randn(rng("statpool-default"), (4, 5, 6))], paths=PATHS)


@pytest.mark.gpu
def test_statisticspooling_in_vulkan_net():
    x = randn(rng("statpool-vk"), (6, 9, 11), 2.0)
    check_in_vulkan_net("StatisticsPooling", {0: 1}, [], [x])
