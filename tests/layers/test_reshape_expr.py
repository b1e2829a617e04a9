"""Reshape with shape_expr (param 6): output sizes computed from the input shapes, vs the oracle."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _expr_util import check_str, make_param_str, run_layer_str
from oracle import randn, rng, run_ncnn_isolated, run_net

# (input numpy shapes, shape_expr); input 0 is reshaped, the others only lend their shapes
CASES = [
    ([(7,)], "0w"),
    ([(12,)], "//(0w,4),4"),
    ([(12,)], "2,-1,3"),
    ([(64,)], "4,2,2,4"),
    ([(7, 13)], "-1"),
    ([(7, 13)], "0h,0w"),
    ([(7, 13)], "*(0w,0h)"),
    ([(16, 32)], "//(0w,2),*(0h,2)"),
    ([(16, 32)], "0,-1"),
    ([(3, 7, 13)], "0w,0h,0c"),
    ([(3, 7, 13)], "*(0w,0h),0c"),
    ([(3, 7, 13)], "0w,*(0h,0c)"),
    ([(3, 10, 20)], "//(0w,2),*(0h,2),0c"),
    ([(3, 10, 20)], "0w,-1,1"),
    ([(4, 6, 8)], "0w,0h,2,//(0c,2)"),
    ([(1, 1, 1)], "0w,0h,0d,0c"),
    ([(3, 227, 227)], "*(0w,0h),0c"),
    ([(2, 3, 5, 7)], "0w,0h,0d,0c"),
    ([(2, 3, 5, 7)], "0w,*(0h,0d),0c"),
    ([(2, 3, 5, 7)], "*(0w,0h),0d,0c"),
    ([(2, 3, 5, 7)], "-1"),
    ([(4, 1, 6, 6)], "0w,0h,-1"),
    ([(2, 3, 5, 7)], "/(*(0w,0h),5),5,0d,0c"),
    ([(2, 3, 5, 7)], "round(*(0w,1.0)),0h,trunc(/(+(0h,0d),2.6)),0c"),
    # a second (third) input lends its shape; one_blob_only becomes False
    ([(6, 5, 4), (3, 8)], "1w,1h,-1"),
    ([(6, 5, 4), (3, 8)], "-1,max(1h,1w)"),
    ([(24,), (2, 3, 4)], "1w,1h,1c"),
    ([(2, 3, 4, 5), (7,), (4, 6, 5)], "2w,2h,*(//(1w,7),2c)"),
    ([(30,), (1,), (1,), (1,), (1,), (1,), (1,), (1,), (1,), (5,)], "9w,-1"),
]


@pytest.mark.parametrize(("shapes", "expr"), CASES)
def test_reshape_expr(shapes, expr):
    g = rng("reshape_expr", shapes, expr)
    inputs = [randn(g, s) for s in shapes]
    # a layer path that took one blob only would not see the second input's shape
    check_str("Reshape", {6: expr}, inputs, tol=0, paths=("layer",))


@pytest.mark.parametrize(
    ("shapes", "expr"), [c for i, c in enumerate(CASES) if i % 3 == 0 or i >= len(CASES) - 5]
)
def test_reshape_expr_net(shapes, expr):
    g = rng("reshape_expr_net", shapes, expr)
    check_str("Reshape", {6: expr}, [randn(g, s) for s in shapes], tol=0, paths=("net",))


def test_plain_params_unchanged_when_expr_absent():
    x = randn(rng("reshape_plain"), (3, 4, 5))
    check_str("Reshape", {0: 10, 1: -1}, [x], tol=0, paths=("layer",))


def test_expr_overrides_params():
    # ncnn ignores w/h/c when shape_expr is set
    x = randn(rng("reshape_over"), (3, 4, 5))
    check_str("Reshape", {0: 10, 1: -1, 6: "0w,*(0h,0c)"}, [x], tol=0, paths=("layer",))


def test_one_blob_only_flag():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    for expr, one in (("0w,-1", True), ("12,3", True), ("1w,-1", False), ("+(0w,3c)", False)):
        layer = create_layer_cpu("Reshape")
        pd = ParamDict()
        pd.set(6, expr)
        assert layer.load_param(pd) == 0
        assert layer.one_blob_only is one, expr


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("+(0w)", "needs 2 operand"),
        ("bogus,0h", "malformed literal"),
        ("1,2,3,4,5", "at most 4"),
    ],
)
def test_bad_expr_refused_at_load(expr, message, caplog):
    x = np.zeros((2, 3, 4), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer_str("Reshape", {6: expr}, [x])
    assert ret != 0
    assert message in caplog.text
    text = make_param_str("Reshape", {6: expr}, [x.shape])
    assert run_net(text, b"", [x])[0] != 0
    if message != "needs 2 operand":
        # the oracle refuses these models too (on a missing operand it crashes, so that case is
        # not asked of it; a child process keeps any crash out of the test run)
        assert run_ncnn_isolated(text, b"", [x])[0] != 0


@pytest.mark.parametrize(
    ("shapes", "expr", "message"),
    [
        ([(5, 6)], "//(12,-(0w,6)),-1", "division by zero"),
        ([(5, 7)], "//(0w,-(0h,5)),-1", "division by zero"),
        ([(5, 6)], "0w,7", "cannot reshape"),
        ([(5, 6)], "-1,-1", "cannot reshape"),
        ([(5, 6)], "-5,6", "cannot reshape"),
    ],
)
def test_bad_sizes_at_run_time(shapes, expr, message, caplog):
    inputs = [np.zeros(s, np.float32) for s in shapes]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer_str("Reshape", {6: expr}, inputs)
    assert ret != 0
    assert message in caplog.text
    if message == "division by zero":
        # the oracle fails the forward too
        text = make_param_str("Reshape", {6: expr}, shapes)
        assert run_ncnn_isolated(text, b"", inputs)[0] != 0


def test_missing_reference_blob(caplog):
    from oracle import default_option

    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Reshape")
    pd = ParamDict()
    pd.set(6, "1w,-1")
    assert layer.load_param(pd) == 0
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret = layer.forward([Mat(np.zeros((4, 6), np.float32))], [Mat()], default_option())
    assert ret != 0
    assert "out of bound" in caplog.text
