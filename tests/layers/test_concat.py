"""Concat against the oracle: every axis (negative too) of 1-4 D blobs with 1-3 parts of odd
sizes, 1-D blobs with any axis, and blobs that do not fit together."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

SHAPES = [(5,), (7, 13), (3, 7, 13), (2, 3, 5, 7), (1, 1, 1), (4, 1, 6, 6)]


def _parts(shape, axis, sizes, key):
    g = rng("concat", shape, axis, sizes, key)
    parts = []
    for n in sizes:
        s = list(shape)
        s[axis] = n
        parts.append(randn(g, tuple(s)))
    return parts


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_axis(shape):
    dims = len(shape)
    for axis in range(-dims, dims):
        for sizes in [(3, 5), (1, 2, 6), (4,)]:
            parts = _parts(shape, axis % dims, sizes, "")
            check_layer("Concat", {0: axis}, [], parts, tol=0)


def test_default_axis_and_big():
    g = rng("concat-big")
    check_layer("Concat", {}, [], [randn(g, (64, 56, 56)), randn(g, (64, 56, 56))], tol=0)
    check_layer("Concat", {0: 1}, [], [randn(g, (3, 227, 227)), randn(g, (3, 1, 227))], tol=0)


def test_1d_ignores_axis():
    """ncnn joins 1-D blobs end to end whatever the axis."""
    parts = _parts((5,), 0, (3, 7), "1d")
    for axis in (1, 2, -2, -3):
        check_layer("Concat", {0: axis}, [], parts, tol=0)


def test_writes_the_parts_in_order():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = -np.arange(4, dtype=np.float32).reshape(2, 2)
    ret, out = run_layer("Concat", {0: -1}, [], [a, b])
    assert ret == 0
    np.testing.assert_array_equal(out[0], np.concatenate([a, b], axis=1))


@pytest.mark.parametrize(
    "shapes,axis,text",
    [
        ([(2, 3, 4), (2, 5, 4)], 0, "differ off axis"),
        ([(2, 3, 4), (2, 3, 5)], 1, "differ off axis"),
        ([(2, 3, 4), (2, 12)], 0, "cannot join"),
        ([(2, 3, 4), (2, 3, 4)], 3, "cannot join"),
        ([(2, 3), (2, 3)], -3, "cannot join"),
    ],
)
def test_mismatch_fails(shapes, axis, text, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Concat", {0: axis}, [], [np.ones(s, np.float32) for s in shapes])
    assert ret != 0 and text in caplog.text
