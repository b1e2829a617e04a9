"""Slice against the oracle: equal splits (-233), explicit sizes, mixed, the indices form
(negative too), every axis incl. negative ones, 1-4 dims, many outputs; bad cuts rejected."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

SHAPES = [(7,), (64,), (7, 13), (16, 32), (3, 7, 13), (16, 8, 8), (2, 3, 5, 7), (4, 6, 6, 6)]


def _x(shape):
    return randn(rng("slice", shape), shape)


@pytest.mark.parametrize("shape", SHAPES)
def test_every_axis(shape):
    x = _x(shape)
    dims = len(shape)
    for axis in range(-dims, dims):
        size = shape[axis if dims > 1 else 0]
        # equal shares (uneven: the last parts take the remainder), explicit sizes, mixed
        for n in (1, 2, 3):
            if size >= n:
                check_layer("Slice", {0: [-233] * n, 1: axis}, [], [x], n_outputs=n, tol=0)
        if size >= 3:
            check_layer("Slice", {0: [1, size - 1], 1: axis}, [], [x], n_outputs=2, tol=0)
            check_layer("Slice", {0: [1, -233, -233], 1: axis}, [], [x], n_outputs=3, tol=0)
            check_layer("Slice", {2: [1, -1], 1: axis}, [], [x], n_outputs=3, tol=0)
            check_layer("Slice", {2: [size - 2], 1: axis}, [], [x], n_outputs=2, tol=0)


@pytest.mark.parametrize("shape", SHAPES)
def test_parts_short_of_the_axis(shape):
    """Sizes that leave the end of the axis out: the tail is dropped.

    The oracle's x86 Slice gets this wrong when cutting w of a 3-D/4-D blob or h of a 4-D one
    (it walks the blob assuming the parts fill the axis, so later rows come out shifted);
    ncnn's reference slice.cpp and ours take each part from its own offset. Those cases are
    checked against numpy.
    """
    x = _x(shape)
    dims = len(shape)
    for axis in range(dims):
        if shape[axis] < 3:
            continue
        params = {0: [1, -233, 1], 1: axis}  # -233 shares what is left among the last two
        if (dims >= 3 and axis == dims - 1) or (dims == 4 and axis == 2):
            ret, got = run_layer("Slice", params, [], [x], n_outputs=3)
            assert ret == 0
            size = shape[axis]
            mid = (size - 1) // 2
            for g, (a, b) in zip(got, [(0, 1), (1, 1 + mid), (1 + mid, 2 + mid)], strict=True):
                np.testing.assert_array_equal(g, np.take(x, range(a, b), axis=axis))
        else:
            check_layer("Slice", params, [], [x], n_outputs=3, tol=0)


def test_many_outputs():
    x = _x((16, 8, 8))
    check_layer("Slice", {0: [-233] * 16}, [], [x], n_outputs=16, tol=0)
    check_layer("Slice", {0: [-233] * 5, 1: -1}, [], [x], n_outputs=5, tol=0)
    check_layer("Slice", {2: [1, 2, 4, 6, -1], 1: 1}, [], [x], n_outputs=6, tol=0)


def test_indices_win_over_slices():
    x = _x((3, 7, 13))
    check_layer("Slice", {0: [1, 1], 2: [5], 1: 2}, [], [x], n_outputs=2, tol=0)


def test_1d_ignores_axis():
    check_layer("Slice", {0: [3, -233], 1: 2}, [], [_x((7,))], n_outputs=2, tol=0)


def test_big():
    x = _x((3, 227, 227))
    check_layer("Slice", {0: [-233] * 3, 1: 1}, [], [x], n_outputs=3, tol=0)
    check_layer("Slice", {0: [100, -233], 1: 2}, [], [x], n_outputs=2, tol=0)


@pytest.mark.parametrize(
    "params,shape,n",
    [
        ({0: [5, 5]}, (7,), 2),  # more than there is
        ({0: [0, -233]}, (7,), 2),  # an empty part
        ({0: [3]}, (7,), 2),  # fewer sizes than tops
        ({2: [5, 3]}, (7,), 3),  # indices going back
        ({2: []}, (7,), 2),  # no sizes at all
        ({0: [-233] * 8}, (7,), 8),  # 8 equal shares of 7
        ({0: [-233, -233], 1: 3}, (3, 7, 13), 2),  # no axis 3
        ({0: [-233, -233], 1: -4}, (3, 7, 13), 2),
    ],
)
def test_bad_cuts(params, shape, n, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Slice", params, [], [_x(shape)], n_outputs=n)
    assert ret != 0 and "Slice" in caplog.text
