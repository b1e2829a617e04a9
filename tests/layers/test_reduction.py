"""Reduction against the oracle: every operation over every subset of axes of 1-4 D blobs (packed
channels too), with and without keepdims, negative axes, reduce_all, coeff, big blobs, and the
rejected params. One case list, every backend (oracle.backends); the long sweeps run on the
GPU's two ends (oracle.SPOT_GRID) in the slow run."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    SPOT_GRID,
    backends,
    check,
    check_layer,
    make_param,
    randn,
    rng,
    run_layer,
    run_ncnn,
    run_net_gpu,
)

OPS = range(11)
# the GPU sets the short lists run on: both packings, fp16 storage, fp16 arithmetic
SETS = ["fp32", "fp32-pack", "fp16s-pack", "fp16sa"]
PROD, LOGSUM = 6, 9
# (8, 5, 7), packed channels on the GPU, is an extra of the GPU sweep: slow (the main run's budget)
SHAPES = [
    (7,),
    (7, 13),
    (3, 7, 13),
    pytest.param((8, 5, 7), marks=pytest.mark.slow, id="(8, 5, 7)"),
    (2, 3, 5, 7),
]


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


def _tol(op: int) -> dict:
    # max and min pick an input value: exact on the CPU
    return dict(tol=0) if op in (4, 5) else {}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Reduction", grid=SPOT_GRID, slow_gpu=True))
def test_every_axes_subset(op, shape, backend):
    x = _input(op, shape)
    for axes in _subsets(len(shape)):
        for keepdims in (0, 1):
            check(backend, "Reduction", {0: op, 1: 0, 3: axes, 4: keepdims, 5: 1}, [], [x], **_tol(op))


# one axes set per rank for every op on the whole grid: a packed channel axis reduced and kept,
# negative axes
SOME_AXES = [
    ((7, 13), [1]),
    ((8, 5, 7), [0]),
    ((3, 7, 13), [1, 2]),
    ((2, 3, 5, 7), [0, 2]),
    ((8, 5, 7), [-1, 0]),
]


@pytest.mark.parametrize("shape,axes", SOME_AXES, ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("backend", backends("Reduction", grid=SETS))
def test_some_axes(op, shape, axes, backend):
    x = _input(op, shape, "some")
    check(backend, "Reduction", {0: op, 1: 0, 2: 2.0, 3: axes, 4: op % 2, 5: 1}, [], [x], **_tol(op))


REDUCE_ALL_SHAPES = [(1,), (64,), (1, 5), (16, 32), (1, 1, 1), (16, 8, 8), (4, 1, 6, 6)]


def _reduce_all(backend, op, shape, pairs):
    x = _input(op, shape, "all")
    for keepdims, coeff in pairs:
        params = {0: op, 4: keepdims} if coeff is None else {0: op, 1: 1, 2: coeff, 4: keepdims}
        check(backend, "Reduction", params, [], [x])


@pytest.mark.parametrize("shape", REDUCE_ALL_SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("backend", backends("Reduction", grid=SETS))
def test_reduce_all_and_coeff(op, shape, backend):
    _reduce_all(backend, op, shape, [(1, None), (0, -0.75)])  # (keepdims, coeff)


# the other two keepdims / coeff pairs: on the GPU they add nothing the pairs above do not
# exercise, so there they run in the slow job (the main run's time budget)
@pytest.mark.parametrize("shape", REDUCE_ALL_SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("backend", backends("Reduction", grid=SPOT_GRID, slow_gpu=True))
def test_reduce_all_and_coeff_other_pairs(op, shape, backend):
    _reduce_all(backend, op, shape, [(0, None), (1, -0.75)])


@pytest.mark.parametrize("op", [0, 3, 8, 10])
@pytest.mark.parametrize("backend", backends("Reduction", grid=SPOT_GRID, slow_gpu=True))
def test_negative_axes(op, backend):
    for shape in [(7, 13), (3, 7, 13), (2, 3, 5, 7)]:
        dims = len(shape)
        x = _input(op, shape, "neg")
        for axes in _subsets(dims):
            neg = [a - dims for a in axes]
            mixed = [a - dims if i % 2 else a for i, a in enumerate(axes)]
            for ax in (neg, mixed):
                check(backend, "Reduction", {0: op, 1: 0, 2: 2.0, 3: ax, 4: 0, 5: 1}, [], [x])


@pytest.mark.parametrize("shape,params", [((7, 13), {0: 0, 1: 1, 3: [1], 5: 1}), ((64,), {0: 3, 1: 0, 3: [0], 5: 1})],
                         ids=str)  # fmt: skip
@pytest.mark.parametrize("backend", backends("Reduction"))
def test_axes_ignored_for_1d_and_with_reduce_all(shape, params, backend):
    check(backend, "Reduction", params, [], [_input(0, shape, "ign")])


def _big(shape):
    # a non-zero mean keeps the reference's sequential fp32 sum accurate to well under 1e-5
    return randn(rng("reduction-big", shape), shape) + np.float32(2.0)


BIG = (
    [((3, 227, 227), {0: op, 1: 0, 3: [1, 2], 5: 1}) for op in (0, 3, 8, 10)]
    + [((3, 227, 227), {0: op}) for op in (0, 3, 8, 10)]
    + [((16, 57, 57), {0: 3, 1: 0, 3: [1, 2], 4: 1, 5: 1}), ((16, 57, 57), {0: 8, 1: 0, 3: [0], 4: 0, 5: 1})]
)


@pytest.mark.parametrize("shape,params", BIG, ids=str)
@pytest.mark.parametrize("backend", backends("Reduction", grid=SETS))
def test_big_blob(shape, params, backend):
    check(backend, "Reduction", params, [], [_big(shape)])


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


@pytest.mark.gpu
def test_bad_axis_fails_on_the_gpu(caplog):
    x = np.ones((8, 5, 7), np.float32)
    param = make_param("Reduction", {0: 0, 1: 0, 3: [5], 5: 1}, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, b"", [x], 1, **GPU_GRID["fp32-pack"])
    assert ret != 0
    assert "out of range" in caplog.text
