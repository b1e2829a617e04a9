"""CELU against the PyPI ncnn: the shapes and alphas of ncnn's tests/test_celu.cpp (every
rank), the layer / in-place / net paths and the extremes, each case on every backend
(oracle.backends: the CPU and the GPU option grid)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import backends, check, randn, rng

PATHS = ("layer", "inplace", "net")

# (numpy shape, alpha) of ncnn's cases
CASES = [
    ((18, 12, 8, 3), 1.0), ((16, 9, 7, 4), 0.1), ((16, 12, 5, 3), 1.0),
    ((14, 7, 6, 9), 0.1), ((10, 9, 6, 5), 1.0), ((15, 2, 8, 6), 0.1),
    ((18, 6, 7), 1.0), ((15, 6, 9), 0.1), ((16, 7, 9), 1.0),
    ((15, 10, 6), 0.1), ((11, 7, 2), 1.0), ((7, 10, 6), 0.1),
    ((18, 12), 1.0), ((12, 18), 0.1), ((27, 23), 1.0), ((16, 18), 0.1), ((16, 20), 0.1),
    ((256,), 1.0), ((64,), 0.1), ((128,), 1.0), ((96,), 0.1), ((128,), 0.1),
]  # fmt: skip


@pytest.mark.parametrize("shape,alpha", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("CELU"))
def test_celu(shape, alpha, backend):
    x = randn(rng("celu", shape, alpha), shape, 3.0)
    check(backend, "CELU", {0: alpha}, [], [x], paths=PATHS)


@pytest.mark.parametrize("params", [{}, {0: 2.5}], ids=str)
@pytest.mark.parametrize("backend", backends("CELU"))
def test_celu_default_alpha_and_extremes(params, backend):
    x = np.array([-1000, -100, -89, -10, -1e-3, -0.0, 0, 1e-3, 10, 100, 1e30], np.float32)
    check(backend, "CELU", params, [], [x], paths=PATHS)
