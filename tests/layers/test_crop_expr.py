"""Crop with starts_expr / ends_expr / axes_expr (params 19-21), vs the oracle.

The oracle reads an empty stack when axes_expr is empty (undefined behaviour), so every oracle
case sets it; the empty-axes form is checked against the equivalent array params instead.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _expr_util import check_str, make_param_str, run_layer_str
from oracle import randn, rng, run_net

# (input numpy shapes, starts_expr, ends_expr, axes_expr); input 0 is cropped
CASES = [
    ([(64,)], "2", "-3", "0"),
    ([(64,)], "//(0w,4)", "*(//(0w,4),3)", "0"),
    ([(7,)], "-233", "-1", "-1"),
    ([(1,)], "0", "0w", "0"),  # the whole blob: passed through
    ([(7, 13)], "1,2", "-1,-233", "0,1"),
    ([(7, 13)], "3", "100", "1"),  # an end past the axis is clamped
    ([(16, 32)], "//(0h,4)", "-(0h,//(0h,4))", "0"),
    ([(16, 32)], "*(0w,0.25),-5", "-233,-1", "-1,0"),
    ([(3, 7, 13)], "//(0h,3),1", "-(0h,1),//(0w,2)", "1,2"),
    ([(3, 7, 13)], "1", "0c", "0"),
    ([(3, 7, 13)], "-4", "0", "-1"),  # an end of 0 means the end
    ([(3, 7, 13)], "0,1,2", "2,-1,-2", "0,1,2"),
    ([(1, 1, 1)], "0,0", "1,1", "1,2"),
    (
        [(3, 227, 227)],
        "//(-(0h,200),2),//(-(0w,200),2)",
        "+(//(-(0h,200),2),200),+(//(-(0w,200),2),200)",
        "1,2",
    ),
    ([(2, 3, 5, 7)], "1,0,1,2", "2,2,-1,-233", "0,1,2,3"),
    ([(2, 3, 5, 7)], "1", "-1", "1"),
    ([(4, 1, 6, 6)], "//(0c,2),1", "0c,-(0w,1)", "0,-1"),
    # reference inputs lend their shapes; one_blob_only becomes False
    ([(3, 7, 13), (2, 4, 5)], "0,0", "1h,1w", "1,2"),
    ([(3, 7, 13), (9,)], "-(0w,1w)", "0w", "2"),
    ([(3, 7, 13), (9,), (2, 3)], "2h", "+(2h,1w)", "-1"),
]


@pytest.mark.parametrize(("shapes", "starts", "ends", "axes"), CASES)
def test_crop_expr(shapes, starts, ends, axes):
    g = rng("crop_expr", shapes, starts, ends, axes)
    inputs = [randn(g, s) for s in shapes]
    check_str("Crop", {19: starts, 20: ends, 21: axes}, inputs, tol=0, paths=("layer",))


@pytest.mark.parametrize(("shapes", "starts", "ends", "axes"), CASES[::3] + CASES[-2:])
def test_crop_expr_net(shapes, starts, ends, axes):
    g = rng("crop_expr_net", shapes, starts, ends, axes)
    inputs = [randn(g, s) for s in shapes]
    check_str("Crop", {19: starts, 20: ends, 21: axes}, inputs, tol=0, paths=("net",))


def test_expressions_override_arrays():
    x = randn(rng("crop_over"), (3, 7, 13))
    params = {9: [0], 10: [2], 11: [0], 19: "1,2", 20: "-1,-2", 21: "1,2"}
    check_str("Crop", params, [x], tol=0, paths=("layer",))


def test_one_expression_alone_is_not_numpy_style():
    # without ends_expr the offsets/sizes params decide
    x = randn(rng("crop_half"), (3, 7, 13))
    check_str("Crop", {0: 2, 3: 5, 4: -233, 5: -233, 19: "1,2", 21: "1,2"}, [x], tol=0, paths=("layer",))


def test_empty_axes_expr_means_every_axis():
    x = randn(rng("crop_noaxes"), (3, 7, 13))
    ret, got = run_layer_str("Crop", {19: "1,//(0h,3),2", 20: "-1,-1,-(0w,2)"}, [x])
    assert ret == 0
    np.testing.assert_array_equal(got[0], x[1:-1, 2:-1, 2:-2])


def test_one_blob_only_flag():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    for params, one in (
        ({19: "1", 20: "-1", 21: "0"}, True),
        ({19: "1", 20: "1w", 21: "0"}, False),
        ({19: "1", 20: "-1", 21: "+(1c,0)"}, False),
        ({19: "1"}, False),  # no box at all: a reference blob gives it
        ({19: "1", 3: 4}, True),
        ({19: "2w", 3: 4}, False),
    ):
        layer = create_layer_cpu("Crop")
        pd = ParamDict()
        for k, v in params.items():
            pd.set(k, v)
        assert layer.load_param(pd) == 0
        assert layer.one_blob_only is one, params


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({19: "+(1)", 20: "-1", 21: "0"}, "needs 2 operand"),
        ({19: "1", 20: "end", 21: "0"}, "malformed literal"),
        ({19: "1", 20: "-1", 21: "0,1,2,3,0"}, "at most 4"),
        ({19: "max(2)", 3: 4}, "needs 2 operand"),  # checked even when not used for the box
    ],
)
def test_bad_expr_refused_at_load(params, message, caplog):
    # deviation: ncnn loads these and fails (or reads garbage) at run time
    x = np.zeros((2, 3, 4), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer_str("Crop", params, [x])
    assert ret != 0
    assert message in caplog.text
    assert run_net(make_param_str("Crop", params, [x.shape]), b"", [x])[0] != 0


@pytest.mark.parametrize(
    ("shapes", "params", "message"),
    [
        ([(2, 3, 4)], {19: "0", 20: "//(1,-(0w,4))", 21: "0"}, "division by zero"),
        ([(2, 3, 4)], {19: "5", 20: "-233", 21: "2"}, "does not fit"),
        ([(2, 3, 4)], {19: "2", 20: "1", 21: "2"}, "does not fit"),
        ([(2, 3, 4)], {19: "0", 20: "1", 21: "3"}, "out of range"),
        ([(2, 3, 4)], {19: "0,1", 20: "1", 21: "1,2"}, "for 2 axes"),
        ([(2, 3, 4)], {19: "0", 20: "1w", 21: "0"}, "out of bound"),
    ],
)
def test_bad_box_at_run_time(shapes, params, message, caplog):
    from oracle import default_option

    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Crop")
    pd = ParamDict()
    for k, v in params.items():
        pd.set(k, v)
    assert layer.load_param(pd) == 0
    bottoms = [Mat(np.zeros(s, np.float32)) for s in shapes]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        if layer.one_blob_only:
            ret = layer.forward(bottoms[0], Mat(), default_option())
        else:
            ret = layer.forward(bottoms, [Mat()], default_option())
    assert ret != 0
    assert message in caplog.text
