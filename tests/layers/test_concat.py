"""Concat against the PyPI ncnn: every axis (negative too) of 1-4 D blobs with 1-3 parts of odd
sizes, packed and unpacked parts mixed (the GPU unpacks first), 1-D blobs with any axis, and
blobs that do not fit together. One case list, every backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SPOT_GRID, backends, check, randn, rng, run_layer

SHAPES = [(5,), (7, 13), (3, 7, 13), (2, 3, 5, 7), (1, 1, 1), (4, 1, 6, 6), (11,), (6, 9), (3, 5, 7)]
# every axis x part sizes: the long sweep, on the GPU grid's two ends
SWEEP = [
    (shape, axis, sizes)
    for shape in SHAPES
    for axis in range(-len(shape), len(shape))
    for sizes in [(3, 5), (1, 2, 6), (4,)]
]
# (part shapes, axis): the full grid
CASES = [
    ([(8,), (4,)], 0),
    ([(3,), (5,)], 0),
    ([(8, 5), (4, 5)], 0),
    ([(8, 5), (8, 3)], 1),
    ([(8, 5, 7), (4, 5, 7)], 0),
    ([(3, 5, 7), (5, 5, 7)], 0),
    ([(8, 5, 7), (8, 2, 7)], 1),
    ([(8, 5, 7), (8, 5, 3)], 2),
    ([(4, 2, 3, 5), (4, 1, 3, 5)], 1),
    ([(4, 2, 3, 5), (8, 2, 3, 5)], 0),
    # one packed input and one not: unpacked first
    ([(8, 5, 7), (3, 5, 7)], 0),
    ([(8, 5), (3, 5)], 0),
    ([(3, 5, 7), (8, 5, 7), (4, 5, 7)], 0),
    ([(2, 5, 7), (3, 5, 7)], 0),  # the SqueezeNet milestone's net case
    # three parts of 1, 3 and 5 along every axis of every rank
    *[
        ([tuple(n if i == axis % d else s for i, s in enumerate(base)) for n in (3, 1, 5)], axis)
        for d, base in ((1, (37,)), (2, (6, 11)), (3, (5, 7, 9)), (4, (3, 4, 5, 7)))
        for axis in range(-d, d)
    ],
]


def _parts(shape, axis, sizes, key):
    g = rng("concat", shape, axis, sizes, key)
    parts = []
    for n in sizes:
        s = list(shape)
        s[axis] = n
        parts.append(randn(g, tuple(s)))
    return parts


@pytest.mark.parametrize("shapes,axis", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Concat"))
def test_concat(shapes, axis, backend):
    inputs = [randn(rng("concat", s, i), s) for i, s in enumerate(shapes)]
    check(backend, "Concat", {0: axis}, [], inputs, tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize("shape,axis,sizes", SWEEP, ids=str)
@pytest.mark.parametrize("backend", backends("Concat", grid=SPOT_GRID))
def test_every_axis(shape, axis, sizes, backend):
    parts = _parts(shape, axis % len(shape), sizes, "")
    check(backend, "Concat", {0: axis}, [], parts, tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize(
    "shapes,axis", [([(64, 56, 56), (64, 56, 56)], None), ([(3, 227, 227), (3, 1, 227)], 1)], ids=str
)
@pytest.mark.parametrize("backend", backends("Concat", grid=SPOT_GRID))
def test_default_axis_and_big(shapes, axis, backend):
    g = rng("concat-big", axis)
    params = {} if axis is None else {0: axis}
    check(backend, "Concat", params, [], [randn(g, s) for s in shapes], tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize("sizes", [(3, 7), (8, 4), (4, 3, 8)], ids=str)
@pytest.mark.parametrize("axis", [1, 2, -2, -3])
@pytest.mark.parametrize("backend", backends("Concat"))
def test_1d_ignores_axis(axis, sizes, backend):
    """ncnn joins 1-D blobs end to end whatever the axis: parts that do not pack, parts that
    all pack (joined packed), and packed and unpacked parts mixed (unpacked first)."""
    parts = _parts((5,), 0, sizes, "1d")
    check(backend, "Concat", {0: axis}, [], parts, tol=0.0, tol_fp32=0.0)


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


def test_flags():
    from ncnn_c.layer import create_layer_cpu

    layer = create_layer_cpu("Concat")
    assert type(layer).__name__ == "Concat" and not layer.one_blob_only and not layer.support_inplace
