"""Reduction against the oracle: every operation over every subset of axes of 1-4 D blobs,
with and without keepdims, negative axes, reduce_all, coeff, and the rejected params."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from oracle import check_layer, make_param, randn, rng, run_layer, run_ncnn

OPS = range(11)
PROD, LOGSUM = 6, 9
SHAPES = [(7,), (7, 13), (3, 7, 13), (2, 3, 5, 7)]


def _input(op: int, shape, key=""):
    g = rng("reduction", op, shape, key)
    if op == PROD:
        # near 1 so that long products stay finite
        return (1 + 0.1 * randn(g, shape)).astype(np.float32)
    if op == LOGSUM:
        return np.abs(randn(g, shape)) + np.float32(0.1)
    return randn(g, shape)


def _subsets(dims: int):
    return [list(s) for n in range(1, dims + 1) for s in itertools.combinations(range(dims), n)]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_axes_subset(op, shape):
    x = _input(op, shape)
    tol = 0 if op in (4, 5) else 1e-5
    for axes in _subsets(len(shape)):
        for keepdims in (0, 1):
            check_layer("Reduction", {0: op, 1: 0, 3: axes, 4: keepdims, 5: 1}, [], [x], tol=tol)


@pytest.mark.parametrize("op", OPS)
def test_reduce_all_and_coeff(op):
    for shape in [(1,), (64,), (1, 5), (16, 32), (1, 1, 1), (16, 8, 8), (4, 1, 6, 6)]:
        x = _input(op, shape, "all")
        for keepdims in (0, 1):
            check_layer("Reduction", {0: op, 4: keepdims}, [], [x])
            check_layer("Reduction", {0: op, 1: 1, 2: -0.75, 4: keepdims}, [], [x])


@pytest.mark.parametrize("op", [0, 3, 8, 10])
def test_negative_axes(op):
    for shape in SHAPES[1:]:
        dims = len(shape)
        x = _input(op, shape, "neg")
        for axes in _subsets(dims):
            neg = [a - dims for a in axes]
            mixed = [a - dims if i % 2 else a for i, a in enumerate(axes)]
            for ax in (neg, mixed):
                check_layer("Reduction", {0: op, 1: 0, 2: 2.0, 3: ax, 4: 0, 5: 1}, [], [x])


def test_axes_ignored_for_1d_and_with_reduce_all():
    x = _input(0, (7, 13), "ign")
    check_layer("Reduction", {0: 0, 1: 1, 3: [1], 5: 1}, [], [x])
    v = _input(0, (64,), "ign")
    check_layer("Reduction", {0: 3, 1: 0, 3: [0], 5: 1}, [], [v])


def test_output_shapes():
    x = np.ones((2, 3, 5, 7), np.float32)
    cases = {
        ((0,), 0): (3, 5, 7),
        ((1,), 0): (2, 5, 7),
        ((3,), 0): (2, 3, 5),
        ((1, 2), 0): (2, 7),
        ((0, 1, 2, 3), 0): (1,),
        ((1, 2), 1): (2, 1, 1, 7),
    }
    for (axes, keep), expected in cases.items():
        ret, out = run_layer("Reduction", {0: 0, 1: 0, 3: list(axes), 4: keep, 5: 1}, [], [x])
        assert ret == 0 and out[0].shape == expected, (axes, keep, out[0].shape if out else None)
        # a sum of ones counts the reduced cells: 210 cells spread over the kept ones
        assert np.all(out[0] == 210 / np.prod(expected))


def test_big_blob():
    g = rng("reduction-big")
    # a non-zero mean keeps the reference's sequential fp32 sum accurate to well under 1e-5
    x = randn(g, (3, 227, 227)) + np.float32(2.0)
    for op in (0, 3, 8, 10):
        check_layer("Reduction", {0: op, 1: 0, 3: [1, 2], 5: 1}, [], [x])
        check_layer("Reduction", {0: op}, [], [x])


# the oracle helper's rel_l2 computes inf - inf on the overflowing cell before masking it
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_logsumexp_overflows_like_ncnn():
    x = np.array([[100.0, 1.0], [1.0, 2.0]], np.float32)
    check_layer("Reduction", {0: 10, 1: 0, 3: [1], 5: 1}, [], [x])
    ret, out = run_layer("Reduction", {0: 10, 1: 0, 3: [1], 5: 1}, [], [x])
    assert ret == 0 and np.isinf(out[0][0]) and np.isfinite(out[0][1])


def test_old_axes_param_rejected_like_ncnn(caplog):
    x = np.ones((3, 4, 5), np.float32)
    params = {0: 0, 1: 0, 3: [1]}
    ref_ret, _ = run_ncnn(make_param("Reduction", params, [x.shape]), b"", [x])
    assert ref_ret != 0
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Reduction", params, [], [x])
    assert ret != 0 and "fixbug0" in caplog.text


@pytest.mark.parametrize(
    "params,text",
    [
        ({0: 11}, "operation"),
        ({0: -1}, "operation"),
        ({0: 0, 1: 0, 3: [3], 5: 1}, "out of range"),
        ({0: 0, 1: 0, 3: [-4], 5: 1}, "out of range"),
        ({0: 0, 1: 0, 5: 1}, "no axes"),
    ],
)
def test_bad_params(params, text, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Reduction", params, [], [np.ones((3, 4, 5), np.float32)])
    assert ret != 0 and text in caplog.text
