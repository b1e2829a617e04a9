"""Squeeze on the GPU over the option grid: the w/h/d/c flags, the axes array (negative
too), dims that are not 1 staying, squeezing to a 1-element blob, packed inputs and outputs."""

from __future__ import annotations

import itertools
import logging

import pytest
from oracle import check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
FAST_SHAPES = [(8, 1), (1, 8, 1), (3, 1, 13), (1, 4, 1, 7)]
SLOW_SHAPES = [(1,), (8,), (1, 5), (4, 1, 1), (1, 1, 1), (8, 1, 1, 1)]
SHAPES = FAST_SHAPES + [pytest.param(s, marks=pytest.mark.slow, id=str(s)) for s in SLOW_SHAPES]
FLAGS = (0, 1, 11, 2)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_flags(shape):
    x = randn(rng("squeeze", shape), shape)
    for bits in itertools.product((0, 1), repeat=4):
        params = {k: 1 for k, b in zip(FLAGS, bits, strict=True) if b}
        check("Squeeze", params, [], [x], grid=FAST)


@pytest.mark.parametrize("shape", [(1, 8, 1), (1, 4, 1, 7), (8, 1, 5)], ids=str)
def test_axes(shape):
    x = randn(rng("squeeze-axes", shape), shape)
    dims = len(shape)
    for n in range(1, dims + 1):
        for axes in itertools.combinations(range(dims), n):
            check("Squeeze", {3: [a - dims for a in axes]}, [], [x], grid=FAST)


def test_full_grid_and_big():
    check("Squeeze", {1: 1}, [], [randn(rng("squeeze-g"), (8, 1, 13))])
    check("Squeeze", {2: 1}, [], [randn(rng("squeeze-big"), (1, 227, 227))], grid=FAST)


def test_bad_axis(caplog):
    x = randn(rng("sq-bad"), (1, 1, 5))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(make_param("Squeeze", {3: [3]}, [x.shape]), make_bin([]), [x])
    assert ret != 0 and "Squeeze" in caplog.text
