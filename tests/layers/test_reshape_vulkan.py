"""Reshape on the GPU over the option grid: every output rank, 0 and -1, the -233 rank cut,
every input rank, elempack 4 <-> 1 changes both ways, an unchanged shape, bad shapes."""

from __future__ import annotations

import logging

import pytest
from oracle import SHAPES_ALL, check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]


def _x(shape):
    return randn(rng("reshape", shape), shape)


# 48 elements: outer axes of 4, 8, 12 (pack4) and 3, 6 (pack1)
CASES_48 = [
    {0: 48},
    {0: -1, 1: 4},
    {0: 16, 1: 3},
    {0: 4, 1: 3, 2: 4},
    {0: -1, 1: 2, 2: 3},
    {0: 0, 1: 0, 2: -1},
    {0: 2, 1: 2, 11: 3, 2: 4},
    {0: 2, 1: -1, 11: 2, 2: 3},
    {0: 4, 1: 12, 2: 1, 3: 1},  # permute flag: ignored
    {0: 48, 1: -233, 2: 5},
    {0: 12, 1: 4, 2: -233, 11: 7},
]


@pytest.mark.parametrize("params", CASES_48, ids=str)
@pytest.mark.parametrize("shape", [(4, 3, 4), (3, 4, 4), (12, 4), (48,), (2, 4, 2, 3)], ids=str)
def test_shapes(shape, params):
    check("Reshape", params, [], [_x(shape)], grid=FAST)


@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7)], ids=str)
def test_every_input_rank(shape):
    x = _x(shape)
    n = x.size
    check("Reshape", {0: -1}, [], [x])
    check("Reshape", {0: 1, 1: -1, 2: 1}, [], [x])
    if n % 4 == 0:
        check("Reshape", {0: n // 4, 1: 4}, [], [x])
        check("Reshape", {0: n // 4, 1: 1, 2: 4}, [], [x])


def test_unchanged_shape_and_big():
    check("Reshape", {0: 0, 1: 0, 2: 0}, [], [_x((8, 5, 7))])
    check("Reshape", {0: -1, 1: 227, 11: 3, 2: 1}, [], [_x((3, 227, 227))], grid=FAST)


@pytest.mark.parametrize("params", [{0: 5, 1: 5}, {0: -1, 1: 5}])
def test_bad_shapes(params, caplog):
    x = _x((2, 3, 4))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Reshape", params, [x.shape]), make_bin([]), [x], use_packing_layout=True
        )
    assert ret != 0 and "Reshape" in caplog.text
