"""CumulativeSum against the PyPI ncnn: the shapes and axes of ncnn's
tests/test_cumulativesum.cpp (every rank, negative axes, a 1-D blob ignoring its axis), the
layer / in-place / net paths, each case on every backend (oracle.backends: the CPU and the GPU
option grid), and bad axes.

Across rows, depths and channels both add one slice to the next in float32: exact. Along a
row (the innermost axis, and every 1-D blob) the PyPI build's x86 SIMD scan adds within
vector-wide blocks in a tree and carries between them in an order that depends on the row
length; ncnn's reference code (and ours, on the CPU and the GPU) adds element after element.
Those cases compare within rounding (rel L2 1e-6)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SPOT_GRID, backends, check, randn, rng, run_layer

PATHS = ("layer", "inplace", "net")

# (numpy shape, axis) of ncnn's cases
CASES = [
    ((6, 3, 4, 5), 0), ((6, 3, 4, 5), 1), ((6, 3, 4, 5), 2), ((6, 3, 4, 5), 3),
    ((6, 3, 4, 5), -4), ((6, 3, 4, 5), -3), ((6, 3, 4, 5), -2), ((6, 3, 4, 5), -1),
    ((6,), 0), ((10,), 0), ((10,), -1), ((10,), -2), ((101,), 0),
    ((8, 6), 0), ((103, 20), 1), ((50, 106), -1), ((50, 106), -2),
    ((8, 6, 10), 0), ((103, 20, 303), 1), ((99, 50, 106), 2),
]  # fmt: skip
# 6.2 M values each: on lavapipe SPOT_GRID (fp32, fp16sa-pack) stands for the GPU grid (the other
# sets took 2 s a case and run the same shader on the smaller shapes above)
LARGE = [((103, 200, 303), -1), ((103, 200, 303), -2)]


def _along_rows(shape, axis) -> bool:
    return len(shape) == 1 or axis % len(shape) == len(shape) - 1


def _check(shape, axis, backend):
    x = randn(rng("cumsum", shape, axis), shape)
    tol = 1e-6 if _along_rows(shape, axis) else 0.0
    check(backend, "CumulativeSum", {0: axis}, [], [x], paths=PATHS, tol=tol, tol_fp32=tol)


@pytest.mark.parametrize("shape,axis", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("CumulativeSum"))
def test_cumulativesum(shape, axis, backend):
    _check(shape, axis, backend)


@pytest.mark.parametrize("shape,axis", LARGE, ids=str)
@pytest.mark.parametrize("backend", backends("CumulativeSum", grid=SPOT_GRID))
def test_cumulativesum_large(shape, axis, backend):
    _check(shape, axis, backend)


@pytest.mark.parametrize("backend", backends("CumulativeSum"))
def test_cumulativesum_default_axis(backend):
    x = randn(rng("cumsum-default"), (5, 6, 7))
    check(backend, "CumulativeSum", {}, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize("shape,axis", [((4, 5, 6), 3), ((4, 5), -3), ((2, 3, 4, 5), 4)], ids=str)
def test_cumulativesum_axis_out_of_range(caplog, shape, axis):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("CumulativeSum", {0: axis}, [], [np.ones(shape, np.float32)])
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert ret != 0
    assert len(errors) == 1 and "CumulativeSum" in errors[0] and "axis" in errors[0], errors
