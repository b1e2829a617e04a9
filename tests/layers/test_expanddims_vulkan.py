"""ExpandDims on the GPU over the option grid: every axes set for 1-D, 2-D and 3-D inputs
(counted from the end: test_expanddims.py's axes_sets), packed and unpacked, and impossible
axes."""

from __future__ import annotations

import logging

import pytest
from oracle import check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu
from test_expanddims import axes_sets

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
SHAPES = [(1,), (7,), (8,), (1, 5), (7, 13), (8, 5), (3, 7, 13), (8, 5, 7)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_axes(shape):
    x = randn(rng("expanddims", shape), shape)
    for _, negative in axes_sets(len(shape)):
        check("ExpandDims", {3: negative}, [], [x], grid=FAST)


def test_full_grid_and_big():
    check("ExpandDims", {3: [0]}, [], [randn(rng("ed-g"), (8, 5))])
    check("ExpandDims", {}, [], [randn(rng("ed-none"), (8, 7, 13))])
    check("ExpandDims", {3: [1]}, [], [randn(rng("ed-big"), (3, 227, 227))], grid=FAST)


def test_bad_axes(caplog):
    x = randn(rng("ed-bad"), (3, 4, 5))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(make_param("ExpandDims", {3: [0, 1]}, [x.shape]), make_bin([]), [x])
    assert ret != 0 and "ExpandDims" in caplog.text
