"""LRN against the PyPI ncnn oracle: both region types, odd/even/large windows, alpha/beta/bias,
1-D..3-D blobs, each case on every backend (oracle.backends: the CPU, and the GPU option grid
of lrn_square + lrn_norm); then the GPU's packed and non-light-mode forms, and 4-D refused."""

from __future__ import annotations

import logging

import pytest
from oracle import (
    GPU_GRID,
    SHAPES_1D,
    SHAPES_2D,
    SHAPES_3D,
    backends,
    check,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_net_gpu,
)

PATHS = ("layer", "inplace", "net")

# (8, 5, 7), (12,), (8, 3): channel and row counts the GPU packs by 4
SHAPES = SHAPES_1D + SHAPES_2D + SHAPES_3D + [(8, 5, 7), (12,), (8, 3)]
LOCAL_SIZES = [1, 2, 3, 4, 7, 11]
REGIONS = pytest.mark.parametrize("region", [0, 1], ids=["across", "within"])


def case(backend, shape, params, scale=2.0, **kw):
    x = randn(rng("lrn", shape, sorted(params.items())), shape, scale)
    return check(backend, "LRN", params, [], [x], paths=PATHS, **kw)


@REGIONS
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("LRN"))
def test_lrn_defaults(shape, region, backend):
    case(backend, shape, {0: region})


@REGIONS
@pytest.mark.parametrize("local_size", LOCAL_SIZES)
@pytest.mark.parametrize("shape", [(9, 6, 7), (8, 6, 7)], ids=str)
@pytest.mark.parametrize("backend", backends("LRN"))
def test_lrn_window_sizes(region, local_size, shape, backend):
    # even sizes: ncnn's channel window spans local_size + 1 channels but divides by local_size
    case(backend, shape, {0: region, 1: local_size})


ALPHA_BETA_BIAS = [
    ((6, 5, 8), {1: 3, 2: 1e-2, 3: 0.5, 4: 2.0}, 5.0),
    ((8, 5, 8), {1: 3, 2: 1e-2, 3: 0.5, 4: 2.0}, 5.0),
    ((6, 5, 8), {1: 5, 2: 3.0, 3: 1.5, 4: 0.5}, 2.0),
    ((16, 13, 13), {1: 5, 2: 1e-4, 3: 0.75, 4: 1.0}, 20.0),  # AlexNet's form
]


@REGIONS
@pytest.mark.parametrize("abb", ALPHA_BETA_BIAS, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("backend", backends("LRN"))
def test_lrn_alpha_beta_bias(region, abb, backend):
    shape, params, scale = abb
    case(backend, shape, {0: region, **params}, scale)


@pytest.mark.parametrize("backend", backends("LRN"))
def test_lrn_not_light(backend):
    # lightmode off: the GPU keeps its intermediate square blob instead of recycling it
    x = randn(rng("lrn-nl"), (8, 5, 7))
    check(backend, "LRN", {0: 1, 1: 3}, [], [x], lightmode=False)


@pytest.mark.gpu
def test_lrn_gpu_packed():
    # packed sets on a pack-4 blob in the main run too (backends() leaves them to the slow run)
    case("vk-fp32-pack", (8, 5, 7), {0: 0})
    case("vk-fp16s-pack", (8, 5, 7), {0: 0})


def test_lrn_rejects_4d_and_bad_params(caplog):
    x = randn(rng("lrn-bad"), (2, 3, 4, 5))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert run_layer("LRN", {}, [], [x])[0] != 0
        assert "dims 4" in caplog.text
        assert run_layer("LRN", {0: 2}, [], [x[0]])[0] != 0
        assert "region_type" in caplog.text
        assert run_layer("LRN", {1: 0}, [], [x[0]])[0] != 0
        assert "local_size" in caplog.text


@pytest.mark.gpu
def test_lrn_gpu_rejects_4d(caplog):
    x = randn(rng("lrn-bad-vk"), (4, 2, 3, 5))
    text = make_param("LRN", {}, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin([]), [x], 1, **GPU_GRID["fp16s-pack"])
    assert ret != 0 and "needs a 1-D..3-D fp32 blob, got dims 4" in caplog.text
