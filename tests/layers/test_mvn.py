"""MVN against the PyPI ncnn: ncnn's tests/test_mvn.cpp cases (4-D blobs, every
normalize_variance / across_channels pair, two eps), the same over 1-D to 3-D blobs (the
output is 3-D for 1-D and 2-D inputs, as ncnn makes it), the layer and net paths, and a
Vulkan net (ncnn has no GPU form: the Vulkan net runs it on the CPU)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, randn, rng, run_layer

PATHS = ("layer", "net")

# ncnn's cases: (numpy shape, normalize_variance, across_channels, eps)
NCNN_CASES = [
    ((3, 3, 4, 5), 0, 0, 0.0001),
    ((3, 3, 4, 5), 1, 0, 0.001),
    ((8, 2, 3, 3), 0, 1, 0.0001),
    ((8, 2, 3, 3), 1, 1, 0.001),
]
MORE_CASES = [
    (shape, nv, ac, 0.0001)
    for shape, (nv, ac) in itertools.product(
        [(7,), (64,), (7, 13), (16, 8, 8), (3, 7, 13), (3, 227, 227), (4, 1, 6, 6)],
        [(0, 0), (1, 0), (0, 1), (1, 1)],
    )
]


@pytest.mark.parametrize("shape,nv,ac,eps", NCNN_CASES + MORE_CASES, ids=str)
def test_mvn(shape, nv, ac, eps):
    x = randn(rng("mvn", shape), shape, 2.0) + np.float32(0.5)
    check_layer("MVN", {0: nv, 1: ac, 2: eps}, [], [x], paths=PATHS)


def test_mvn_defaults():
    check_layer("MVN", {}, [], [randn(rng("mvn-default"), (4, 5, 6))], paths=PATHS)


def test_mvn_outputs_3d_for_a_2d_blob():
    ret, (y,) = run_layer("MVN", {}, [], [np.arange(6, dtype=np.float32).reshape(2, 3)])
    assert ret == 0 and y.shape == (1, 2, 3)


@pytest.mark.gpu
def test_mvn_in_vulkan_net():
    x = randn(rng("mvn-vk"), (6, 9, 11), 2.0)
    check_in_vulkan_net("MVN", {0: 1, 1: 0, 2: 0.001}, [], [x])
