"""Flip against the PyPI ncnn (exact): the shapes of ncnn's tests/test_flip.cpp with every
axes combination it tries per rank, negative axes, an empty list, the layer and net paths,
each case on every backend (oracle.backends: the CPU and the GPU option grid), and bad params."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net

PATHS = ("layer", "net")

SHAPES = [
    (24, 7, 6, 5), (12, 9, 8, 7), (13, 5, 4, 3),
    (24, 7, 5), (12, 9, 7), (13, 5, 3),
    (24, 15), (12, 17), (15, 19),
    (128,), (124,), (127,),
]  # fmt: skip


def _axes_sets(dims):
    """Every non-empty subset of the axes, as ncnn's test_flip_nd tries them."""
    for n in range(1, dims + 1):
        yield from itertools.combinations(range(dims), n)


CASES = [(shape, list(axes)) for shape in SHAPES for axes in _axes_sets(len(shape))]


@pytest.mark.parametrize("shape,axes", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Flip"))
def test_flip(shape, axes, backend):
    x = randn(rng("flip", shape), shape)
    check(backend, "Flip", {0: axes}, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize(
    "shape,axes",
    [((4, 3, 5, 6), [-1, -3]), ((5, 6, 7), [-3]), ((6, 7), [-1, 0]), ((9,), [-1]), ((5, 6, 7), [2, 2, 0])],
    ids=str,
)
@pytest.mark.parametrize("backend", backends("Flip"))
def test_flip_negative_and_repeated_axes(shape, axes, backend):
    x = randn(rng("flip-neg", shape), shape)
    check(backend, "Flip", {0: axes}, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize("backend", backends("Flip"))
def test_flip_without_axes_passes_through(backend):
    x = randn(rng("flip-none"), (3, 5, 7))
    check(backend, "Flip", {}, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


def _errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_flip_too_many_axes(caplog):
    x = np.ones((2, 3, 4, 5), np.float32)
    params = {0: [0, 1, 2, 3, 0]}
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Flip", params, [], [x])
        assert ret != 0
        errors = _errors(caplog)
        assert len(errors) == 1 and "Flip" in errors[0] and "axes" in errors[0], errors
        ret, _ = run_net(make_param("Flip", params, [x.shape]), make_bin([]), [x])
        assert ret != 0


@pytest.mark.parametrize("shape,axes", [((5, 6, 7), [3]), ((6, 7), [-3]), ((7,), [1])], ids=str)
def test_flip_axis_out_of_range(caplog, shape, axes):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Flip", {0: axes}, [], [np.ones(shape, np.float32)])
    errors = _errors(caplog)
    assert ret != 0
    assert len(errors) == 1 and "Flip" in errors[0] and "axis" in errors[0], errors
