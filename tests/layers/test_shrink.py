"""Shrink against the PyPI ncnn (exact, tol 0): the shapes and (bias, lambd) pairs of ncnn's
tests/test_shrink.cpp (every rank), the defaults, values on the thresholds, the layer /
in-place / net paths, each case on every backend (oracle.backends: the CPU and the GPU option
grid; fp32 exact there too). Between the thresholds ncnn gives 0, not x as its operator table
says."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import backends, check, randn, rng

PATHS = ("layer", "inplace", "net")

# (numpy shape, bias, lambd) of ncnn's cases
CASES = [
    ((3, 8, 24, 12), 0.0, 5.0), ((4, 16, 7, 9), 0.3, 0.3), ((3, 4, 9, 6), 4.5, 6.1),
    ((24, 6, 12), 0.0, 5.0), ((24, 8, 7), 0.3, 0.3), ((5, 4, 3), 4.5, 6.1),
    ((7, 5), 0.0, 0.3), ((9, 7), 4.0, 4.0), ((5, 3), 2.0, 4.0),
    ((25,), 0.0, 0.3), ((63,), 4.0, 4.0), ((1024,), 2.0, 4.0),
]  # fmt: skip


@pytest.mark.parametrize("shape,bias,lambd", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Shrink"))
def test_shrink(shape, bias, lambd, backend):
    # fp16 values, so that fp16 storage moves none across a threshold (one within half an
    # fp16 ulp of lambd would flip between x - bias and 0: a jump of about lambd)
    x = randn(rng("shrink", shape, bias, lambd), shape, 5.0).astype(np.float16).astype(np.float32)
    check(backend, "Shrink", {0: bias, 1: lambd}, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


# the defaults, and a negative lambd; values an fp32 ulp from the thresholds are no fp16
# values, so the GPU runs them in its fp32 sets only
@pytest.mark.parametrize("params", [{}, {0: 0.25, 1: -0.5}], ids=str)
@pytest.mark.parametrize("backend", backends("Shrink", grid=["fp32", "fp32-pack"]))
def test_shrink_defaults_and_thresholds(params, backend):
    x = np.array(
        [-1.0, -0.5, -0.49999997, 0.0, 0.49999997, 0.5, 0.50000006, 1.0, np.inf, -np.inf], np.float32
    )
    check(backend, "Shrink", params, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)
