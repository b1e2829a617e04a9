"""Reshape against the oracle: every output rank, 0 (copy the input's dim) and -1 (the rest),
the -233 rank cut, the ignored permute flag, every input rank, and bad shapes rejected."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer


def _x(shape):
    return randn(rng("reshape", shape), shape)


# output params (ncnn names) for every output rank, each resolving for a 24-element input
SHAPE_24 = (2, 3, 4)
CASES_24 = [
    {0: 24},
    {0: -1},
    {0: 6, 1: 4},
    {0: -1, 1: 2},
    {0: 8, 1: -1},
    {0: 2, 1: 3, 2: 4},
    {0: -1, 1: 3, 2: 2},
    {0: 4, 1: -1, 2: 3},
    {0: 4, 1: 3, 2: -1},
    {0: 0, 1: 0, 2: -1},  # w and h copied from the input
    {0: 0, 1: -1, 2: 0},
    {0: 2, 1: 2, 11: 3, 2: 2},
    {0: -1, 1: 2, 11: 3, 2: 2},
    {0: 2, 1: 2, 11: -1, 2: 2},
    {0: 2, 1: 2, 11: 3, 2: -1},
    {0: 0, 1: 0, 11: 1, 2: 0},  # 3-D to 4-D keeping w, h, c
    {0: 4, 1: 6, 2: 1, 3: 1},  # permute flag: ignored by current ncnn
    {0: 24, 1: -233, 2: 5},  # h unset: the rank stops at 1, c is never read
    {0: 6, 1: 4, 2: -233, 11: 7},  # c unset: 2-D, d not read
]


@pytest.mark.parametrize("params", CASES_24)
def test_shapes_from_3d(params):
    check_layer("Reshape", params, [], [_x(SHAPE_24)], tol=0)


@pytest.mark.parametrize("shape", SHAPES_ALL)
def test_every_input_rank(shape):
    x = _x(shape)
    n = x.size
    for params in ({0: -1}, {0: n, 1: 1}, {0: 1, 1: -1, 2: 1}, {0: -1, 1: 1, 11: 1, 2: 1}):
        check_layer("Reshape", params, [], [x], tol=0)


def test_zero_copies_named_dims_4d():
    x = _x((2, 3, 5, 7))
    check_layer("Reshape", {0: 0, 1: 0, 11: 0, 2: 0}, [], [x], tol=0)
    check_layer("Reshape", {0: 0, 1: -1, 11: 1, 2: 0}, [], [x], tol=0)
    check_layer("Reshape", {0: 0, 1: -1}, [], [x], tol=0)
    check_layer("Reshape", {0: 21, 1: 0, 2: 2}, [], [x], tol=0)  # h=0 copies the 4-D input's h


def test_big_blob():
    x = _x((3, 227, 227))
    check_layer("Reshape", {0: 227, 1: 681}, [], [x], tol=0)
    check_layer("Reshape", {0: -1, 1: 227, 11: 3, 2: 1}, [], [x], tol=0)


def test_output_is_usable_after_input_changes():
    # the shared storage must carry the data: extract after the layer object is gone
    x = _x((4, 6, 6))
    ret, out = run_layer("Reshape", {0: 36, 1: 4}, [], [x])
    assert ret == 0
    np.testing.assert_array_equal(out[0], x.reshape(4, 36))


@pytest.mark.parametrize(
    "params,shape",
    [
        ({0: 5, 1: 5}, (2, 3, 4)),  # 25 != 24
        ({0: -1, 1: 5}, (2, 3, 4)),  # 24 not divisible by 5
        ({0: -1, 1: -1}, (2, 3, 4)),  # two unknowns
        ({0: -5}, (2, 3, 4)),
        ({}, (2, 3, 4)),  # no output shape at all
    ],
)
def test_bad_shapes_rejected(params, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Reshape", params, [], [_x(shape)])
    assert ret != 0
    assert "Reshape" in caplog.text or "reshape" in caplog.text
