"""ShuffleChannel on the GPU over the option grid: every dividing group, reverse, 3-D and
4-D blobs with channel counts that do and do not divide by 4, 1-D/2-D pass-through, bad
groups."""

from __future__ import annotations

import logging

import pytest
from oracle import check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]


@pytest.mark.parametrize("shape", [(6, 7, 13), (12, 5, 5), (16, 8, 8), (6, 3, 5, 7), (8, 1, 6, 6)], ids=str)
def test_groups(shape):
    x = randn(rng("shufflechannel", shape), shape)
    for g in range(1, shape[0] + 1):
        if shape[0] % g == 0:
            for reverse in (0, 1):
                check("ShuffleChannel", {0: g, 1: reverse}, [], [x], grid=FAST)


def test_full_grid():
    check("ShuffleChannel", {0: 2}, [], [randn(rng("sc-g"), (8, 5, 7))])
    check("ShuffleChannel", {0: 3, 1: 1}, [], [randn(rng("sc-g3"), (12, 5, 7))])
    check("ShuffleChannel", {0: 1}, [], [randn(rng("sc-1"), (8,))])
    check("ShuffleChannel", {0: 1, 1: 1}, [], [randn(rng("sc-2"), (7, 13))])


def test_big():
    check("ShuffleChannel", {0: 3}, [], [randn(rng("sc-big"), (3, 227, 227))], grid=FAST)


def test_bad_group(caplog):
    x = randn(rng("sc-bad"), (6, 7, 13))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(make_param("ShuffleChannel", {0: 4}, [x.shape]), make_bin([]), [x])
    assert ret != 0 and "ShuffleChannel" in caplog.text
