"""Normalize on the GPU (the shared normalisation passes, sum-of-squares mode) over the option
grid against the PyPI ncnn CPU fp32 oracle: every norm region, eps mode, shared/per-channel
scale, every dims, packed and unpacked channel counts, long segments (chunked). The case
builders are test_normalize.py's."""

from __future__ import annotations

import logging

import pytest
from oracle import GPU_GRID, SHAPES_ALL, check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu
from test_normalize import REGIONS, eps_mode_params, normalize_case

pytestmark = pytest.mark.gpu

QUICK = [(8, 5, 7), (3, 7, 13), (12,), (8, 3), (4, 2, 3, 5)]


def case(shape, params, scale_size=None, tiny=False, grid=None):
    return check_layer_gpu("Normalize", *normalize_case(shape, params, scale_size, tiny), grid=grid)


@pytest.mark.parametrize("shared", [0, 1])
@pytest.mark.parametrize("spatial,channel", REGIONS, ids=str)
@pytest.mark.parametrize("shape", QUICK, ids=str)
def test_normalize_regions(shape, spatial, channel, shared):
    case(shape, {0: spatial, 4: channel, 1: shared})


@pytest.mark.slow
@pytest.mark.parametrize("shared", [0, 1])
@pytest.mark.parametrize("spatial,channel", REGIONS, ids=str)
@pytest.mark.parametrize("shape", SHAPES_ALL, ids=str)
def test_normalize_regions_all_shapes(shape, spatial, channel, shared):
    case(shape, {0: spatial, 4: channel, 1: shared})


@pytest.mark.parametrize("eps_mode", [0, 1, 2])
@pytest.mark.parametrize("spatial,channel", REGIONS[:3], ids=str)
def test_normalize_eps_modes(eps_mode, spatial, channel):
    for params, tiny in eps_mode_params(spatial, channel, eps_mode):
        case((8, 6, 7), params, tiny=tiny, grid=["fp32", "fp16sa-pack"])


@pytest.mark.parametrize("spatial,channel", REGIONS[:3], ids=str)
def test_normalize_chunked(spatial, channel):
    # 2400 values a channel and 1200 channels a position: several chunks per segment
    case((8, 40, 60), {0: spatial, 4: channel})
    case((1200, 2, 3), {0: spatial, 4: channel}, grid=["fp32", "fp32-pack", "fp16s-pack"])


def test_normalize_extra_scale_values_are_ignored():
    case((4, 4, 5), {0: 1, 4: 0}, scale_size=8)


def test_normalize_rejects_short_scale(caplog):
    g = rng("normalize-bad-vk")
    text = make_param("Normalize", {0: 1, 3: 4}, [(8, 3, 3)], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            text, make_bin([(randn(g, (4,)), 1)]), [randn(g, (8, 3, 3))], 1, **GPU_GRID["fp16s-pack"]
        )
    assert ret != 0 and "4 scale values for a blob of 8 channels" in caplog.text


def test_not_in_place():
    g = rng("normalize-nl")
    check_layer_gpu("Normalize", {0: 1, 3: 8}, [(randn(g, (8,)), 1)], [randn(g, (8, 5, 7))], lightmode=False)
