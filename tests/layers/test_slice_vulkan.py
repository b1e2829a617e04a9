"""Slice on the GPU over the option grid: equal shares, explicit sizes, indices, every axis
(negative too) of 1-D..4-D blobs, parts whose channel counts do and do not divide by 4, many
outputs, parts short of the axis (against numpy: the oracle's x86 Slice shifts some of
those, see test_slice.py), and bad cuts."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
FAST_SHAPES = [(7,), (16, 32), (3, 7, 13), (12, 5, 7), (8, 6, 6, 6)]
SLOW_SHAPES = [(64,), (7, 13), (16, 8, 8), (2, 3, 5, 7)]
SHAPES = FAST_SHAPES + [pytest.param(s, marks=pytest.mark.slow, id=str(s)) for s in SLOW_SHAPES]


def _x(shape):
    return randn(rng("slice", shape), shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_axis(shape):
    x = _x(shape)
    dims = len(shape)
    for axis in range(-dims, dims):
        size = shape[axis if dims > 1 else 0]
        check("Slice", {0: [-233] * 2, 1: axis}, [], [x], n_outputs=2, grid=FAST)
        if size >= 3:
            check("Slice", {0: [1, -233, -233], 1: axis}, [], [x], n_outputs=3, grid=FAST)
            check("Slice", {2: [1, -1], 1: axis}, [], [x], n_outputs=3, grid=FAST)


@pytest.mark.parametrize("shape", [(16,), (12, 5), (16, 8, 8), (12, 3, 4, 5)], ids=str)
def test_full_grid(shape):
    # parts of 4, 8 and 4 (packable) and of 3, 5, 8 (mixed)
    check("Slice", {0: [4, -233, 4]}, [], [_x(shape)], n_outputs=3)
    check("Slice", {2: [3, 8]}, [], [_x(shape)], n_outputs=3)


def test_many_outputs():
    x = _x((16, 8, 8))
    check("Slice", {0: [-233] * 16}, [], [x], n_outputs=16, grid=FAST)
    check("Slice", {2: [1, 2, 4, 6, -1], 1: 1}, [], [x], n_outputs=6, grid=FAST)


def test_1d_ignores_axis():
    check("Slice", {0: [3, -233], 1: 2}, [], [_x((7,))], n_outputs=2)


def test_big():
    check("Slice", {0: [100, -233], 1: 2}, [], [_x((3, 227, 227))], n_outputs=2, grid=FAST)


@pytest.mark.parametrize("pack", [False, True])
def test_parts_short_of_the_axis(pack):
    x = _x((8, 7, 13))
    for axis in range(3):
        params = {0: [1, -233, 1], 1: axis}
        ret, got = run_net_gpu(
            make_param("Slice", params, [x.shape], 3), make_bin([]), [x], 3, use_packing_layout=pack
        )
        assert ret == 0
        mid = (x.shape[axis] - 1) // 2
        for g, (a, b) in zip(got, [(0, 1), (1, 1 + mid), (1 + mid, 2 + mid)], strict=True):
            np.testing.assert_array_equal(g, np.take(x, range(a, b), axis=axis))


@pytest.mark.parametrize(
    "params,shape,n",
    [({0: [5, 5]}, (7,), 2), ({0: [-233] * 8}, (7,), 8), ({0: [-233, -233], 1: 3}, (8, 7, 13), 2)],
)
def test_bad_cuts(params, shape, n, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Slice", params, [shape], n), make_bin([]), [_x(shape)], n, use_packing_layout=True
        )
    assert ret != 0 and "Slice" in caplog.text
