"""Erf against the PyPI ncnn: the shapes of ncnn's tests/test_erf.cpp (every rank), the
layer / in-place / net paths, the tails and the special values, and a Vulkan net (ncnn has a
GPU form; ours runs the layer on the CPU inside the Vulkan net). The oracle's SIMD polynomial
and our float64 evaluation differ by a few ulp at most."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import backends, check, randn, rng

PATHS = ("layer", "inplace", "net")

SHAPES = [
    (24, 7, 6, 5), (12, 9, 8, 7), (13, 5, 4, 3),
    (5, 12, 10), (18, 6, 3), (7, 4, 12),
    (28, 12), (15, 20), (13, 19),
    (64,), (156,), (243,),
]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Erf"))
def test_erf(shape, backend):
    x = randn(rng("erf", shape), shape, 1.5)
    check(backend, "Erf", {}, [], [x], paths=PATHS)


@pytest.mark.parametrize("backend", backends("Erf"))
def test_erf_tails_and_special_values(backend):
    x = np.concatenate(
        [
            np.linspace(-6, 6, 1001, dtype=np.float32),
            np.array([0.0, -0.0, 1e-30, -1e-20, 1.9999999, 2.0, 2.0000002, 1e10, -1e10], np.float32),
        ]
    )
    check(backend, "Erf", {}, [], [x], paths=PATHS)


@pytest.mark.parametrize("backend", backends("Erf"))
def test_erf_small_values_keep_relative_precision(backend):
    # near 0 erf(x) ~ 1.128 x: a 1 - erfc form would lose every digit here (on the GPU too:
    # its series holds 1e-6 in fp32)
    x = np.geomspace(1e-30, 1e-2, 64).astype(np.float32)
    check(backend, "Erf", {}, [], [x], paths=PATHS, tol=1e-6, tol_fp32=1e-6)
