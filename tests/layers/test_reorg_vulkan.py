"""Reorg on the GPU over the option grid: strides 1-3 in both modes, sizes that do and do
not divide by the stride, channel counts that pack and do not, 2-D input, too-small blobs."""

from __future__ import annotations

import logging

import pytest
from oracle import check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 7, 13), (16, 8, 8), (2, 12, 12), (5, 9, 6)], ids=str)
def test_strides_and_modes(shape):
    x = randn(rng("reorg", shape), shape)
    for stride in (1, 2, 3):
        if stride <= min(shape[1:]):
            for mode in (0, 1):
                check("Reorg", {0: stride, 1: mode}, [], [x], grid=FAST)


def test_full_grid():
    check("Reorg", {0: 2}, [], [randn(rng("reorg-g"), (8, 6, 10))])
    check("Reorg", {0: 2, 1: 1}, [], [randn(rng("reorg-g1"), (3, 7, 13))])
    check("Reorg", {0: 2}, [], [randn(rng("reorg-2d"), (7, 13))])
    check("Reorg", {0: 2, 1: 1}, [], [randn(rng("reorg-2d"), (8, 12))])


def test_big():
    check("Reorg", {0: 2, 1: 1}, [], [randn(rng("reorg-big"), (3, 227, 227))], grid=FAST)


def test_too_small(caplog):
    x = randn(rng("reorg-bad"), (3, 3, 13))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(make_param("Reorg", {0: 4}, [x.shape]), make_bin([]), [x])
    assert ret != 0 and "Reorg" in caplog.text
