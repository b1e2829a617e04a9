"""GLU against the PyPI ncnn: the shapes and axes of ncnn's tests/test_glu.cpp (every rank,
negative axes, odd sizes), the layer and net paths, each case on every backend
(oracle.backends: the CPU and the GPU option grid), and bad axes."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import backends, check, randn, rng, run_layer

PATHS = ("layer", "net")

# (numpy shape, axis) of ncnn's cases
CASES = [
    ((8, 3, 7, 5), 0), ((3, 6, 7, 5), 1), ((3, 3, 8, 5), 2), ((3, 3, 7, 10), 3),
    ((8, 3, 7, 5), -4), ((3, 6, 7, 5), -3), ((3, 3, 8, 5), -2), ((3, 3, 7, 10), -1),
    ((24, 7, 6), 0), ((24, 8, 6), 1), ((24, 8, 6), 2), ((22, 7, 36), 0),
    ((23, 256, 5), -2), ((60, 9, 129), 2), ((30, 9, 129), -1),
    ((24, 10), 0), ((24, 7), 1), ((22, 128), 0), ((256, 128), 1),
    ((10,), 0), ((20,), 0), ((128,), 0),
    ((7, 5, 3), 0), ((5, 7), -2), ((9,), 3),  # odd sizes drop the last slice; 1-D ignores the axis
]  # fmt: skip


@pytest.mark.parametrize("shape,axis", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("GLU"))
def test_glu(shape, axis, backend):
    x = randn(rng("glu", shape, axis), shape, 3.0)
    check(backend, "GLU", {0: axis}, [], [x], paths=PATHS)


@pytest.mark.parametrize("backend", backends("GLU"))
def test_glu_default_axis(backend):
    x = randn(rng("glu-default"), (6, 5, 4), 3.0)
    check(backend, "GLU", {}, [], [x], paths=PATHS)


def _refused(caplog, params, x, *words):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("GLU", params, [], [x])
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert ret != 0
    assert len(errors) == 1 and all(w in errors[0] for w in ("GLU", *words)), errors


@pytest.mark.parametrize("axis", [3, -4, 7])
def test_glu_axis_out_of_range(caplog, axis):
    _refused(caplog, {0: axis}, np.ones((4, 6, 8), np.float32), "axis", str(axis))


def test_glu_axis_of_size_one(caplog):
    # ncnn makes an empty blob here; we say why instead
    _refused(caplog, {0: 1}, np.ones((4, 1, 8), np.float32), "axis")
