"""Softplus against the PyPI ncnn: the shapes of ncnn's tests/test_softplus.cpp (every rank),
the layer / in-place / net paths and exp's overflow range, each case on every backend
(oracle.backends: the CPU, and the GPU option grid or a Vulkan net running it on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import backends, check, randn, rng

PATHS = ("layer", "inplace", "net")

# numpy shapes of ncnn's RandomMat(w, h[, d], c) cases
SHAPES = [
    (24, 7, 6, 5), (12, 9, 8, 7), (13, 5, 4, 3),
    (24, 7, 5), (12, 9, 7), (13, 5, 3),
    (24, 15), (12, 17), (15, 19),
    (128,), (124,), (127,),
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Softplus"))
def test_softplus(shape, backend):
    x = randn(rng("softplus", shape), shape, 4.0)
    check(backend, "Softplus", {}, [], [x], paths=PATHS)


@pytest.mark.parametrize("backend", backends("Softplus"))
def test_softplus_extremes(backend):
    # exp overflows to inf past ~88.7 (so does the result), the sum rounds to 1 far below 0
    x = np.array([-1000, -100, -90, -20, -1e-3, 0, 1e-3, 20, 80, 88.5, 89, 100, 1000], np.float32)
    check(backend, "Softplus", {}, [], [x], paths=PATHS)
