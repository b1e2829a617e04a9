"""Normalize against the PyPI ncnn oracle: every norm region, eps mode, shared/per-channel scale.

The case builders are shared with test_normalize_vulkan.py."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer

PATHS = ("layer", "inplace", "net")


# -- the cases, shared with test_normalize_vulkan.py ---------------------------------------------

REGIONS = [(1, 1), (1, 0), (0, 1), (0, 0)]  # (across_spatial, across_channel)


def normalize_case(shape, params, scale_size=None, tiny=False):
    """(params, weights, inputs) of a Normalize over a random ``shape`` input; the scale blob
    holds one value (shared) or one per channel unless ``scale_size`` says otherwise."""
    g = rng("normalize", shape, sorted(params.items()))
    x = randn(g, shape, 1e-3 if tiny else 2.0)
    c = shape[0] if len(shape) >= 3 else 1
    n = scale_size if scale_size is not None else (1 if params.get(1, 0) else c)
    return {3: n, **params}, [(randn(g, (n,)), 1)], [x]


def eps_mode_params(spatial, channel, eps_mode):
    """(params, tiny) pairs where the eps branch of ``eps_mode`` decides the result: tiny inputs
    and a big eps, shared and per-channel scales."""
    for tiny, eps, shared in itertools.product((False, True), (1e-4, 1e-2), (0, 1)):
        yield {0: spatial, 4: channel, 1: shared, 2: eps, 9: eps_mode}, tiny


# -- the CPU tests -------------------------------------------------------------------------------


def case(shape, params, scale_size=None, tiny=False):
    return check_layer("Normalize", *normalize_case(shape, params, scale_size, tiny), paths=PATHS)


@pytest.mark.parametrize("shared", [0, 1])
@pytest.mark.parametrize("spatial,channel", REGIONS, ids=str)
@pytest.mark.parametrize("shape", SHAPES_ALL, ids=str)
def test_normalize_regions(shape, spatial, channel, shared):
    case(shape, {0: spatial, 4: channel, 1: shared})


@pytest.mark.parametrize("eps_mode", [0, 1, 2])
@pytest.mark.parametrize("spatial,channel", REGIONS[:3], ids=str)
def test_normalize_eps_modes(eps_mode, spatial, channel):
    for params, tiny in eps_mode_params(spatial, channel, eps_mode):
        case((5, 6, 7), params, tiny=tiny)


def test_normalize_default_is_across_channel():
    # ncnn's default across_channel is 1 (operators.md says 0): per-position norms
    case((6, 9, 10), {})
    case((6, 9, 10), {1: 1})


def test_normalize_extra_scale_values_are_ignored():
    case((3, 4, 5), {0: 1, 4: 0}, scale_size=8)


def test_normalize_rejects_short_scale_and_bad_mode(caplog):
    x = randn(rng("norm-bad"), (4, 3, 3))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert run_layer("Normalize", {3: 2}, [(np.ones(2, np.float32), 1)], [x])[0] != 0
        assert "2 scale values" in caplog.text
        assert run_layer("Normalize", {3: 4, 9: 3}, [(np.ones(4, np.float32), 1)], [x])[0] != 0
        assert "eps_mode" in caplog.text
        assert run_layer("Normalize", {3: 0}, [], [x])[0] != 0
        assert "no scale data" in caplog.text
