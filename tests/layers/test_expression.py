"""The shape-expression evaluator (ncnn_c/layer/_expression.py), by hand and against the oracle.

The oracle cannot evaluate an expression on its own, so a one-value expression is fed to it
as Crop's ``starts_expr`` on a 1-D ``arange`` input: the first output value is the offset the
expression produced (a negative start counts from the end, -233 means 0), which recovers the
evaluated int exactly for results in (-W, W).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import run_ncnn

from ncnn_c.layer._expression import (
    INT_MIN,
    ExpressionError,
    ShapeExpression,
    count_expression_blobs,
    eval_list_expression,
    tokenize,
)
from ncnn_c.mat import Mat


def _mat(shape):
    return Mat(np.zeros(shape, np.float32))


# (expression, input numpy shapes, expected ints), computed by hand from ncnn's rules
HAND = [
    ("5", [], [5]),
    ("-7", [], [-7]),
    ("+(3,4)", [], [7]),
    ("-(2,5)", [], [-3]),
    ("*(6,7)", [], [42]),
    ("//(7,2)", [], [3]),
    ("//(-7,2)", [], [-3]),  # C division truncates toward zero
    ("//(-7.5,2)", [], [-4]),  # a float operand: floor
    ("//(7.5,2)", [], [3]),
    ("//(-7.0,2)", [], [-3]),  # "-7.0" reads as the int -7
    ("/(7,2)", [], [3]),
    ("/(-7,2)", [], [-3]),  # -3.5 truncated
    ("max(2,9)", [], [9]),
    ("min(2,-3.5)", [], [-3]),
    ("abs(-5)", [], [5]),
    ("neg(5)", [], [-5]),
    ("sign(-3)", [], [-1]),
    ("sign(0)", [], [0]),
    ("sign(2.5)", [], [1]),
    ("square(-3)", [], [9]),
    ("trunc(-2.7)", [], [-2]),
    ("ceil(2.1)", [], [3]),
    ("ceil(-0.5)", [], [0]),
    ("floor(-2.1)", [], [-3]),
    ("round(2.5)", [], [3]),
    ("round(-2.5)", [], [-3]),  # halves away from zero, not to even
    ("round(0.49)", [], [0]),
    ("*(sqrt(2),1000)", [], [1414]),
    ("*(0.1,30)", [], [3]),
    ("1.5", [], [1]),
    ("-1.5", [], [-1]),
    ("1e3", [], [1000]),
    ("10w", [], [10]),  # not a blob reference: sscanf reads the leading 10
    ("0x10", [], [16]),
    (".5", [], [0]),
    ("and(12,10)", [], [8]),
    ("or(12,10)", [], [14]),
    ("xor(12,10)", [], [6]),
    ("lshift(1,3)", [], [8]),
    ("rshift(-16,2)", [], [-4]),
    ("+(2147483647,1)", [], [INT_MIN]),  # int32 wrap-around
    ("/(1,0)", [], [INT_MIN]),  # inf converts to INT_MIN
    ("sqrt(-1)", [], [INT_MIN]),  # nan too
    ("//(1.5,0)", [], [INT_MIN]),
    ("+(1,2,3)", [], [3, 3]),  # arity, not brackets, groups the operands
    ("3,4", [], [3, 4]),
    ("0w,0h,0d,0c,0n", [(2, 3, 5, 7)], [7, 5, 3, 2, 1]),
    ("0w,0h,0d,0c", [(5, 7)], [7, 5, 1, 1]),
    ("0w,0h,0d,0c", [(9,)], [9, 1, 1, 1]),
    ("0w,0h,0d,0c", [(4, 6, 8)], [8, 6, 1, 4]),
    ("//(0w,2),*(0h,2),0c", [(3, 10, 20)], [10, 20, 3]),
    ("*(+(0c,1c),2)", [(3, 4, 5), (2, 1, 1)], [10]),
    ("1w,0w", [(3,), (8,)], [8, 3]),
]


@pytest.mark.parametrize(("expr", "shapes", "expected"), HAND)
def test_hand_computed(expr, shapes, expected):
    assert eval_list_expression(expr, [_mat(s) for s in shapes]) == expected


def _oracle_start(expr: str, width: int) -> int | None:
    txt = f'7767517\n2 2\nInput in0 0 1 in0 0={width}\nCrop op 1 1 in0 out0 19="{expr}" 20="{width}" 21="0"\n'
    ret, outs = run_ncnn(txt, b"", [np.arange(width, dtype=np.float32)])
    assert ret == 0, f"oracle failed on {expr!r}"
    return int(outs[0][0])


# one-value expressions the oracle evaluates (results well inside the crop probe's range)
ORACLE = [
    "5", "-7", "0", "+(3,4)", "-(2,5)", "*(6,-7)", "//(7,2)", "//(-7,2)", "//(7,-2)", "//(-7.5,2)",
    "//(7.5,-2)", "/(7,2)", "/(-7,2)", "/(1,3)", "max(2,9)", "max(-2.5,-3)", "min(2,-3.5)",
    "min(4,4.5)", "abs(-5)", "abs(-5.5)", "neg(5)", "neg(2.5)", "sign(-3)", "sign(0)", "sign(2.5)",
    "sign(-0.5)", "square(-3)", "square(1.5)", "trunc(-2.7)", "trunc(7)", "ceil(2.1)", "ceil(-0.5)",
    "ceil(3)", "floor(-2.1)", "floor(2.9)", "round(2.5)", "round(-2.5)", "round(0.49)",
    "round(-1.2)", "*(acos(0.5),1000)", "*(acosh(2),1000)", "*(asin(0.5),1000)",
    "*(asinh(1),1000)", "*(atan(1),1000)", "*(atanh(0.5),1000)", "*(cos(1),1000)",
    "*(cosh(1),1000)", "*(erf(0.5),1000)", "*(exp(1),1000)", "*(log(10),1000)",
    "*(log10(50),1000)", "*(reciprocal(3),1000)", "*(rsqrt(2),1000)", "*(sin(1),1000)",
    "*(sinh(1),1000)", "*(sqrt(2),1000)", "*(tan(1),1000)", "*(tanh(0.5),1000)",
    "*(atan2(1,2),1000)", "*(fmod(-7.5,2),100)", "*(fmod(7.5,2),100)", "*(pow(2,0.5),1000)",
    "pow(3,4)", "*(remainder(-7.5,2),100)", "*(remainder(7.5,-2),100)", "*(remainder(7.5,2),100)",
    "*(logaddexp(1,2),1000)", "*(logaddexp(-3,-3),1000)", "and(12,10)", "or(12,10)",
    "xor(12,10)", "lshift(1,3)", "rshift(-16,2)", "rshift(100,3)", "*(0.1,30)", "1.5", "-1.5",
    "1e3", "2.5e1", "10w", "0x10", ".5", "+5", "1e", "3,4", "+(1,2,3)",
    "+(*(2,3),//(-(20,3),4))", "max(//(9,2),min(3,abs(-8)))", "floor(/(+(3,4),2))",
    "ceil(/(-(0,7),2))", "round(*(1.25,2))", "-(*(2.5,2),1)", "+(0.5,0.5)", "*(+(0.5,1),-4)",
    "-(1,0w)", "//(0w,3)", "-(0w,1)", "neg(//(0w,4))", "*(0w,0.25)", "-(0h,0c)", "+(0d,0n)",
]  # fmt: skip


@pytest.mark.parametrize("expr", ORACLE)
def test_against_oracle(expr):
    width = 4000
    got = eval_list_expression(expr, [_mat((width,))])[0]
    assert -width < got < width and got != -233, f"probe cannot show {got}"
    expected_offset = got if got >= 0 else width + got
    assert _oracle_start(expr, width) == expected_offset


def test_every_operator_is_covered():
    from ncnn_c.layer._expression import ARITY

    text = " ".join(ORACLE)
    missing = [op for op in ARITY if not any(op in t for t in tokenize(text))]
    assert not missing


def test_tokenize_and_count():
    assert tokenize("//(0w,2),*(0h,2),0c") == ["//", "0w", "2", "*", "0h", "2", "0c"]
    assert tokenize("") == []
    assert count_expression_blobs("0w,1h") == 2
    assert count_expression_blobs("*(+(0c,3c),2)") == 4
    assert count_expression_blobs("12,10w,+(1,2)") == 0
    assert count_expression_blobs("") == 0
    e = ShapeExpression("+(1w,2),0c,3")
    assert e.blob_count == 2
    assert e.n_results == 3


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("", "no tokens"),
        ("(,)", "no tokens"),
        ("+(1)", "needs 2 operand"),
        ("sqrt", "needs 1 operand"),
        ("max(0w)", "needs 2 operand"),
        ("foo(1,2)", "malformed literal"),
        ("1,x", "malformed literal"),
        ("@0", "malformed literal"),
    ],
)
def test_malformed(expr, message):
    with pytest.raises(ExpressionError, match=message):
        ShapeExpression(expr)


@pytest.mark.parametrize(
    ("expr", "shapes", "message"),
    [
        ("1w", [(3,)], "blob index 1 out of bound"),
        ("0w", [], "blob index 0 out of bound"),
        ("//(5,0)", [], "division by zero"),
        ("//(5,-(0w,0w))", [(4,)], "division by zero"),
        ("//(-(0,+(2147483647,1)),-1)", [], "overflow"),
    ],
)
def test_evaluation_errors(expr, shapes, message):
    e = ShapeExpression(expr)
    with pytest.raises(ExpressionError, match=message):
        e.evaluate([_mat(s) for s in shapes])


def test_empty_blob_reads_zero():
    # ncnn checks shape expressions at load time on empty stand-in blobs
    assert eval_list_expression("0w,0h,0d,0c,0n", [Mat()]) == [0, 0, 0, 0, 1]


def test_logged_by_layer(caplog):
    from _expr_util import run_layer_str

    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer_str("Reshape", {6: "+(1)"}, [np.zeros(4, np.float32)])
    assert ret != 0
    assert "needs 2 operand" in caplog.text
