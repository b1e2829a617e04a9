"""LRN against the PyPI ncnn oracle: both region types, odd/even/large windows, 1-D..3-D blobs."""

from __future__ import annotations

import logging

import pytest
from oracle import SHAPES_1D, SHAPES_2D, SHAPES_3D, check_layer, randn, rng, run_layer

PATHS = ("layer", "inplace", "net")


# -- shared with test_lrn_vulkan.py --------------------------------------------------------------

SHAPES = SHAPES_1D + SHAPES_2D + SHAPES_3D
LOCAL_SIZES = [1, 2, 3, 4, 7, 11]
REGIONS = pytest.mark.parametrize("region", [0, 1], ids=["across", "within"])


def lrn_input(shape, params, scale=2.0):
    return randn(rng("lrn", shape, sorted(params.items())), shape, scale)


# -- the CPU tests -------------------------------------------------------------------------------


def case(shape, params, scale=2.0):
    return check_layer("LRN", params, [], [lrn_input(shape, params, scale)], paths=PATHS)


@REGIONS
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lrn_defaults(shape, region):
    case(shape, {0: region})


@REGIONS
@pytest.mark.parametrize("local_size", LOCAL_SIZES)
def test_lrn_window_sizes(region, local_size):
    # even sizes: ncnn's channel window spans local_size + 1 channels but divides by local_size
    case((9, 6, 7), {0: region, 1: local_size})


@REGIONS
def test_lrn_alpha_beta_bias(region):
    case((6, 5, 8), {0: region, 1: 3, 2: 1e-2, 3: 0.5, 4: 2.0}, scale=5.0)
    case((6, 5, 8), {0: region, 1: 5, 2: 3.0, 3: 1.5, 4: 0.5})
    # AlexNet's form
    case((16, 13, 13), {0: region, 1: 5, 2: 1e-4, 3: 0.75, 4: 1.0}, scale=20.0)


def test_lrn_rejects_4d_and_bad_params(caplog):
    x = randn(rng("lrn-bad"), (2, 3, 4, 5))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert run_layer("LRN", {}, [], [x])[0] != 0
        assert "dims 4" in caplog.text
        assert run_layer("LRN", {0: 2}, [], [x[0]])[0] != 0
        assert "region_type" in caplog.text
        assert run_layer("LRN", {1: 0}, [], [x[0]])[0] != 0
        assert "local_size" in caplog.text
