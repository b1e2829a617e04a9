"""Normalize against the PyPI ncnn oracle: every norm region, eps mode, shared/per-channel scale,
every dims, packed and unpacked channel counts, segments long enough to be chunked on the GPU.
One case list, every backend (oracle.backends)."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    SHAPES_ALL,
    SPOT_GRID,
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

REGIONS = [(1, 1), (1, 0), (0, 1), (0, 0)]  # (across_spatial, across_channel)
# every rank, plus channel counts that pack by 4 (and 4-D with packable channels)
SHAPES = SHAPES_ALL + [(8, 5, 7), (12,), (8, 3), (4, 2, 3, 5)]


def normalize_case(shape, params, scale_size=None, tiny=False):
    """(params, weights, inputs) of a Normalize over a random ``shape`` input; the scale blob
    holds one value (shared) or one per channel unless ``scale_size`` says otherwise."""
    g = rng("normalize", shape, sorted(params.items()))
    x = randn(g, shape, 1e-3 if tiny else 2.0)
    c = shape[0] if len(shape) >= 3 else 1
    n = scale_size if scale_size is not None else (1 if params.get(1, 0) else c)
    return {3: n, **params}, [(randn(g, (n,)), 1)], [x]


def case(backend, shape, params, scale_size=None, tiny=False, **kwargs):
    return check(
        backend, "Normalize", *normalize_case(shape, params, scale_size, tiny), paths=PATHS, **kwargs
    )


@pytest.mark.parametrize("shared", [0, 1])
@pytest.mark.parametrize("spatial,channel", REGIONS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Normalize"))
def test_normalize_regions(shape, spatial, channel, shared, backend):
    case(backend, shape, {0: spatial, 4: channel, 1: shared})


# (params, tiny) where the eps branch of the mode decides the result: tiny inputs and a big eps,
# shared and per-channel scales
EPS_CASES = [
    ({0: spatial, 4: channel, 1: shared, 2: eps, 9: eps_mode}, tiny)
    for eps_mode in (0, 1, 2)
    for spatial, channel in REGIONS[:3]
    for tiny, eps, shared in itertools.product((False, True), (1e-4, 1e-2), (0, 1))
]


@pytest.mark.parametrize("params,tiny", EPS_CASES, ids=str)
@pytest.mark.parametrize("shape", [(5, 6, 7), (8, 6, 7)], ids=str)
@pytest.mark.parametrize("backend", backends("Normalize", grid=SPOT_GRID))
def test_normalize_eps_modes(shape, params, tiny, backend):
    case(backend, shape, params, tiny=tiny)


@pytest.mark.parametrize("params", [{}, {1: 1}], ids=str)
@pytest.mark.parametrize("backend", backends("Normalize"))
def test_normalize_default_is_across_channel(params, backend):
    # ncnn's default across_channel is 1 (operators.md says 0): per-position norms
    case(backend, (6, 9, 10), params)


@pytest.mark.parametrize("shape", [(3, 4, 5), (4, 4, 5)], ids=str)
@pytest.mark.parametrize("backend", backends("Normalize"))
def test_normalize_extra_scale_values_are_ignored(shape, backend):
    case(backend, shape, {0: 1, 4: 0}, scale_size=8)


# 2400 values a channel and 1200 channels a position: several chunks per segment on the GPU
@pytest.mark.parametrize("shape", [(8, 40, 60), (1200, 2, 3)], ids=str)
@pytest.mark.parametrize("spatial,channel", REGIONS[:3], ids=str)
@pytest.mark.parametrize("backend", backends("Normalize"))
def test_normalize_chunked(spatial, channel, shape, backend):
    case(backend, shape, {0: spatial, 4: channel})


@pytest.mark.parametrize("backend", backends("Normalize"))
def test_not_in_place(backend):
    # the net's non-light mode keeps the bottom: the layer must write a new blob
    case(backend, (8, 5, 7), {0: 1}, lightmode=False)


def test_normalize_rejects_short_scale_and_bad_mode(caplog):
    x = randn(rng("norm-bad"), (4, 3, 3))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert run_layer("Normalize", {3: 2}, [(np.ones(2, np.float32), 1)], [x])[0] != 0
        assert "2 scale values" in caplog.text
        assert run_layer("Normalize", {3: 4, 9: 3}, [(np.ones(4, np.float32), 1)], [x])[0] != 0
        assert "eps_mode" in caplog.text
        assert run_layer("Normalize", {3: 0}, [], [x])[0] != 0
        assert "no scale data" in caplog.text


@pytest.mark.gpu
def test_normalize_rejects_short_scale_on_the_gpu(caplog):
    g = rng("normalize-bad-vk")
    text = make_param("Normalize", {0: 1, 3: 4}, [(8, 3, 3)], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            text, make_bin([(randn(g, (4,)), 1)]), [randn(g, (8, 3, 3))], 1, **GPU_GRID["fp16s-pack"]
        )
    assert ret != 0 and "4 scale values for a blob of 8 channels" in caplog.text
