"""UnaryOp: every op_type 0..27 against the PyPI ncnn oracle, over every dims."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, rng, run_layer

PATHS = ("layer", "inplace", "net")

# op_type -> (name, input range inside the op's domain); exact ops compare with tol 0
OPS = {
    0: ("abs", (-10, 10)), 1: ("neg", (-10, 10)), 2: ("floor", (-10, 10)), 3: ("ceil", (-10, 10)),
    4: ("square", (-10, 10)), 5: ("sqrt", (0.01, 10)), 6: ("rsqrt", (0.01, 10)), 7: ("exp", (-10, 10)),
    8: ("log", (0.01, 10)), 9: ("sin", (-10, 10)), 10: ("cos", (-10, 10)), 11: ("tan", (-1.5, 1.5)),
    12: ("asin", (-0.99, 0.99)), 13: ("acos", (-0.99, 0.99)), 14: ("atan", (-10, 10)),
    15: ("reciprocal", (-10, 10)), 16: ("tanh", (-10, 10)), 17: ("log10", (0.01, 10)),
    18: ("round", (-10, 10)), 19: ("trunc", (-10, 10)), 20: ("sign", (-10, 10)), 21: ("expm1", (-10, 10)),
    22: ("sinh", (-10, 10)), 23: ("asinh", (-10, 10)), 24: ("cosh", (-10, 10)), 25: ("acosh", (1.0, 10)),
    26: ("atanh", (-0.99, 0.99)), 27: ("log1p", (-0.99, 10)),
}  # fmt: skip
EXACT = {0, 1, 2, 3, 4, 18, 19, 20}


@pytest.mark.parametrize("shape", SHAPES_ALL)
@pytest.mark.parametrize("op_type", sorted(OPS))
def test_unaryop(op_type, shape):
    lo, hi = OPS[op_type][1]
    x = rng("unaryop", op_type, shape).uniform(lo, hi, shape).astype(np.float32)
    if op_type in (18, 20):
        # exact halves (round) and zeros (sign) are where the definitions differ
        x = np.round(x * 2) / 2
    check_layer("UnaryOp", {0: op_type}, [], [x], tol=0.0 if op_type in EXACT else 1e-5, paths=PATHS)


def test_round_half_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997], np.float32)
    ret, (y,) = run_layer("UnaryOp", {0: 18}, [], [x])
    assert ret == 0 and y.tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 4.0, 0.0]
    check_layer("UnaryOp", {0: 18}, [], [x], tol=0.0, paths=PATHS)


def test_default_is_abs():
    x = np.array([-1.5, 2.0, -0.0], np.float32)
    check_layer("UnaryOp", {}, [], [x], tol=0.0, paths=PATHS)


def test_out_of_domain_gives_nan_like_ncnn():
    x = np.array([-4.0, -1.0, 0.25, 9.0], np.float32)
    ret, (y,) = run_layer("UnaryOp", {0: 5}, [], [x])
    assert ret == 0 and np.isnan(y[:2]).all() and y[2:].tolist() == [0.5, 3.0]


@pytest.mark.parametrize("op_type", [-1, 28, 100])
def test_unknown_op_type_is_rejected(op_type, caplog):
    x = np.ones((2, 3, 4), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("UnaryOp", {0: op_type}, [], [x])
    assert ret != 0
    assert f"unknown op_type {op_type}" in caplog.text
