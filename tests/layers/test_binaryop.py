"""BinaryOp against the oracle: every op, the scalar form (also in place) and every row of
ncnn's broadcasting tables (binaryop-broadcasting.md), for both operand orders."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer

# ops whose first operand is a base of pow, or a divisor: keep those operands away from 0
POW_LIKE = (6, 9)
ALL_OPS = range(19)


def _operands(op: int, a_shape, b_shape, key):
    g = rng("binaryop", op, a_shape, b_shape, key)
    a = randn(g, a_shape, 2.0)
    b = randn(g, b_shape, 2.0)
    if op in POW_LIKE:
        # positive bases and moderate exponents keep pow finite and real
        a = np.abs(a) + np.float32(0.25)
        b = np.abs(b) + np.float32(0.25)
        b = np.clip(b, 0.25, 3.0).astype(np.float32)
        a = np.clip(a, 0.25, 3.0).astype(np.float32)
    return a, b


def _check(op: int, a_shape, b_shape, key=""):
    a, b = _operands(op, a_shape, b_shape, key)
    return check_layer("BinaryOp", {0: op}, [], [a, b])


def _np(shape_whc: str) -> tuple[int, ...]:
    """A shape written as the doc does ([w,h,c]) in numpy order."""
    return tuple(int(s) for s in shape_whc.strip("[]").split(","))[::-1]


# -- every op, same shapes and scalar form ---------------------------------------------------------
@pytest.mark.parametrize("op", ALL_OPS)
def test_ops_same_shape(op):
    for shape in [(7,), (7, 13), (3, 7, 13), (2, 3, 5, 7)]:
        _check(op, shape, shape)


@pytest.mark.parametrize("op", ALL_OPS)
def test_ops_scalar(op):
    for shape in SHAPES_ALL:
        g = rng("binaryop-scalar", op, shape)
        x = randn(g, shape, 2.0)
        b = -1.75 if op not in POW_LIKE else 1.5
        if op in POW_LIKE:
            x = np.abs(x) + np.float32(0.25)
        check_layer("BinaryOp", {0: op, 1: 1, 2: b}, [], [x], paths=("layer", "inplace", "net"))


def test_scalar_default_b_is_zero():
    x = randn(rng("binaryop-default"), (3, 7, 13))
    check_layer("BinaryOp", {0: 0, 1: 1}, [], [x], paths=("layer", "inplace", "net"))
    check_layer("BinaryOp", {0: 4, 1: 1}, [], [x], paths=("layer", "inplace", "net"))
    check_layer("BinaryOp", {}, [], [x, x])  # every param at its default: add


def test_big_blob():
    _check(0, (3, 227, 227), (3, 227, 227))
    _check(2, (3, 227, 227), (3,))
    _check(1, (3, 227, 227), (227,))


# -- the doc's broadcasting tables ----------------------------------------------------------------
SCALAR_LIKE = [
    ("[2]", "[1]"),
    ("[2,3]", "[1]"),
    ("[2,3]", "[1,1]"),
    ("[2,3,4]", "[1]"),
    ("[2,3,4]", "[1,1]"),
    ("[2,3,4]", "[1,1,1]"),
    ("[2,3,4,5]", "[1]"),
    ("[2,3,4,5]", "[1,1]"),
    ("[2,3,4,5]", "[1,1,1]"),
    ("[2,3,4,5]", "[1,1,1,1]"),
]
NO_BROADCAST = [("[2]", "[2]"), ("[2,3]", "[2,3]"), ("[2,3,4]", "[2,3,4]"), ("[2,3,4,5]", "[2,3,4,5]")]
EXPLICIT = [
    ("[2,3]", "[1,3]"),
    ("[2,3]", "[2,1]"),
    ("[2,3,4]", "[1,3,4]"),
    ("[2,3,4]", "[2,1,4]"),
    ("[2,3,4]", "[2,3,1]"),
    ("[2,3,4]", "[1,1,4]"),
    ("[2,3,4]", "[1,3,1]"),
    ("[2,3,4]", "[2,1,1]"),
    ("[2,3,4,5]", "[1,3,4,5]"),
    ("[2,3,4,5]", "[2,1,4,5]"),
    ("[2,3,4,5]", "[2,3,1,5]"),
    ("[2,3,4,5]", "[2,3,4,1]"),
    ("[2,3,4,5]", "[1,1,4,5]"),
    ("[2,3,4,5]", "[1,3,1,5]"),
    ("[2,3,4,5]", "[1,3,4,1]"),
    ("[2,3,4,5]", "[2,1,1,5]"),
    ("[2,3,4,5]", "[2,1,4,1]"),
    ("[2,3,4,5]", "[2,3,1,1]"),
    ("[2,3,4,5]", "[1,1,1,5]"),
    ("[2,3,4,5]", "[1,1,4,1]"),
    ("[2,3,4,5]", "[1,3,1,1]"),
    ("[2,3,4,5]", "[2,1,1,1]"),
]
IMPLICIT_INNER = [
    ("[2,3]", "[3]"),
    ("[2,3,4]", "[4]"),
    ("[2,3,4]", "[3,4]"),
    ("[2,3,4,5]", "[5]"),
    ("[2,3,4,5]", "[4,5]"),
    ("[2,3,4,5]", "[3,4,5]"),
]
IMPLICIT_OUTER = [("[2,3]", "[2]"), ("[2,3,4]", "[2]"), ("[2,3,4,5]", "[2]")]
TABLE = SCALAR_LIKE + NO_BROADCAST + EXPLICIT + IMPLICIT_INNER + IMPLICIT_OUTER


@pytest.mark.parametrize("a,b", TABLE, ids=[f"{a}-{b}" for a, b in TABLE])
def test_broadcast_table(a, b):
    a_shape, b_shape = _np(a), _np(b)
    # sub and div are not symmetric: they catch a swapped operand; B op A covers the mirror
    for op in (1, 3, 10):
        _check(op, a_shape, b_shape)
        _check(op, b_shape, a_shape)


def test_broadcast_table_output_shapes():
    """The C column of the doc: the output always has A's shape, in either operand order."""
    for a, b in TABLE:
        x = np.ones(_np(a), np.float32)
        y = np.ones(_np(b), np.float32)
        for pair in ([x, y], [y, x]):
            ret, out = run_layer("BinaryOp", {0: 0}, [], pair)
            assert ret == 0 and out[0].shape == x.shape, (a, b)


def test_same_size_prefers_inner_axis():
    """[2,2] with [2]: the 1-D blob runs along h (numpy rows), not w."""
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([10, 20], np.float32)
    ret, out = run_layer("BinaryOp", {0: 0}, [], [a, b])
    assert ret == 0
    np.testing.assert_array_equal(out[0], [[11, 12], [23, 24]])
    _check(1, (2, 2), (2,))
    _check(1, (3, 3, 3), (3,))
    _check(1, (2, 2, 2, 2), (2,))


# every pair of ranks, odd sizes, both sides broadcasting at once
RANK_PAIRS = [
    ((7,), (7,)),
    ((7,), (1,)),
    ((1,), (7,)),
    ((7, 13), (13,)),
    ((7, 13), (7,)),
    ((13,), (7, 13)),
    ((7, 1), (1, 13)),
    ((5, 7, 13), (5,)),
    ((5, 7, 13), (13,)),
    ((5, 7, 13), (5, 7)),
    ((5, 7), (5, 7, 13)),
    ((5, 1, 13), (1, 7, 1)),
    ((4, 5, 7, 13), (4,)),
    ((4, 5, 7, 13), (13,)),
    ((4, 5, 7, 13), (4, 5)),
    ((4, 5, 7, 13), (4, 5, 7)),
    ((4, 5, 7), (4, 5, 7, 13)),
    ((4, 1, 7, 1), (1, 5, 1, 13)),
    ((1, 1, 1, 1), (4, 5, 7, 13)),
]


@pytest.mark.parametrize("op", ALL_OPS)
def test_rank_pairs(op):
    for a_shape, b_shape in RANK_PAIRS:
        _check(op, a_shape, b_shape)


# -- bad input --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((7,), (5,)),
        ((3, 4), (5,)),
        ((3, 4), (3, 5)),
        ((2, 3, 4), (3,)),
        ((2, 3, 4), (3, 3)),
        ((2, 3, 4, 5), (2, 4, 4, 5)),
    ],
)
def test_shapes_that_do_not_fit(a_shape, b_shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "BinaryOp", {0: 0}, [], [np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)]
        )
    assert ret != 0
    assert "cannot broadcast" in caplog.text


@pytest.mark.parametrize("op", [-1, 19, 100])
def test_unknown_op_rejected(op, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("BinaryOp", {0: op}, [], [np.ones(3, np.float32), np.ones(3, np.float32)])
    assert ret != 0
    assert "op_type" in caplog.text


def test_one_blob_without_scalar_rejected(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("BinaryOp", {0: 0}, [], [np.ones(3, np.float32)])
    assert ret != 0
    assert "two input blobs" in caplog.text


def test_flags_follow_with_scalar():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    for ws, expected in ((0, False), (1, True)):
        layer = create_layer_cpu("BinaryOp")
        pd = ParamDict()
        pd.set(1, ws)
        assert layer.load_param(pd) == 0
        assert layer.one_blob_only is expected and layer.support_inplace is expected
