"""LRN on the GPU (lrn_square + lrn_norm) over the option grid against the PyPI ncnn CPU fp32
oracle: both regions, window sizes odd and even, alpha/beta/bias, 1-D..3-D, packed channels
and rows and unpacked ones, 4-D refused; test_lrn.py's shapes, sizes and inputs, and more."""

from __future__ import annotations

import logging

import pytest
from oracle import (
    GPU_GRID,
    check_layer_gpu,
    make_bin,
    make_param,
    randn,
    rng,
    run_net_gpu,
)
from test_lrn import LOCAL_SIZES, REGIONS, SHAPES, lrn_input

pytestmark = pytest.mark.gpu


def case(shape, params, scale=2.0, grid=None):
    return check_layer_gpu("LRN", params, [], [lrn_input(shape, params, scale)], grid=grid)


@REGIONS
@pytest.mark.parametrize("shape", SHAPES + [(8, 5, 7), (12,), (8, 3)], ids=str)
def test_lrn_defaults(shape, region):
    case(shape, {0: region})


@REGIONS
@pytest.mark.parametrize("local_size", LOCAL_SIZES)
def test_lrn_window_sizes(region, local_size):
    case((8, 6, 7), {0: region, 1: local_size})
    case((9, 6, 7), {0: region, 1: local_size}, grid=["fp32", "fp16sa"])


@REGIONS
def test_lrn_alpha_beta_bias(region):
    case((8, 5, 8), {0: region, 1: 3, 2: 1e-2, 3: 0.5, 4: 2.0}, scale=5.0)
    case((6, 5, 8), {0: region, 1: 5, 2: 3.0, 3: 1.5, 4: 0.5})
    case((16, 13, 13), {0: region, 1: 5, 2: 1e-4, 3: 0.75, 4: 1.0}, scale=20.0)


def test_not_in_place():
    case((8, 5, 7), {0: 0}, grid=["fp32-pack", "fp16s-pack"])
    x = randn(rng("lrn-nl"), (8, 5, 7))
    check_layer_gpu("LRN", {0: 1, 1: 3}, [], [x], lightmode=False)


def test_lrn_rejects_4d(caplog):
    g = rng("lrn-bad-vk")
    x = randn(g, (4, 2, 3, 5))
    text = make_param("LRN", {}, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin([]), [x], 1, **GPU_GRID["fp16s-pack"])
    assert ret != 0 and "needs a 1-D..3-D fp32 blob, got dims 4" in caplog.text
