"""GroupNorm against the PyPI ncnn oracle: every dims, group counts, affine on/off, bad blobs.

The case list and builder are shared with test_norms_vulkan.py."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _norm_check import check_norm
from oracle import SHAPES_ALL, make_bin, make_param, randn, rng, run_layer, run_ncnn

# -- the cases, shared with test_norms_vulkan.py -------------------------------------------------


def groupnorm_case(shape, group, affine=1, eps=None, channels=None, offset=0.0):
    """(params, weights, inputs) of a GroupNorm over a random ``shape`` input; its channel
    axis (w for 1-D, h for 2-D, c for 3-D/4-D) is numpy's first, unless ``channels`` says."""
    g = rng("groupnorm", shape, group, affine, eps, channels)
    x = randn(g, shape, 2.0) + np.float32(offset)
    c = channels if channels is not None else shape[0]
    params = {0: group, 1: c, 3: affine}
    if eps is not None:
        params[2] = eps
    weights = [(randn(g, (c,)), 1), (randn(g, (c,)), 1)] if affine else []
    return params, weights, [x]


# (shape, group)
GROUPS = [
    ((64,), 8),
    ((16, 32), 4),
    ((16, 32), 16),
    ((16, 8, 8), 4),
    ((6, 5, 7), 3),
    ((4, 1, 6, 6), 2),
    ((8, 3, 5, 7), 8),
]


# -- the CPU tests -------------------------------------------------------------------------------


def case(shape, group, affine=1, eps=None, channels=None, offset=0.0):
    params, weights, inputs = groupnorm_case(shape, group, affine, eps, channels, offset)
    return check_norm("GroupNorm", params, weights, inputs, int(np.prod(shape)) // group == 1)


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape", SHAPES_ALL, ids=str)
def test_groupnorm_one_group(shape, affine):
    case(shape, 1, affine)


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape,group", GROUPS, ids=str)
def test_groupnorm_groups(shape, group, affine):
    case(shape, group, affine)


@pytest.mark.parametrize("eps", [1e-5, 0.5])
def test_groupnorm_eps_and_offset(eps):
    # a large common offset tests that the mean is taken before the variance
    case((6, 9, 11), 2, 1, eps=eps, offset=50.0)


def test_groupnorm_rejects_channels_not_divisible(caplog):
    # ncnn's x86 layer fails load_param for 7 channels in 3 groups; so do we
    x = randn(rng("gn-div"), (7, 4, 5))
    params = {0: 3, 1: 7, 3: 0}
    assert run_ncnn(make_param("GroupNorm", params, [x.shape]), make_bin([]), [x])[0] != 0
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("GroupNorm", params, [], [x])
    assert ret != 0
    assert "group 3" in caplog.text


def test_groupnorm_large():
    case((32, 56, 56), 8, 1)


def test_groupnorm_rejects_wrong_channels(caplog):
    x = randn(rng("gn-bad"), (5, 4, 4))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("GroupNorm", {0: 2, 1: 4, 3: 0}, [], [x])
    assert ret != 0
    assert "GroupNorm" in caplog.text and "channels" in caplog.text


def test_groupnorm_rejects_bad_group(caplog):
    x = randn(rng("gn-bad2"), (4, 4, 4))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("GroupNorm", {0: 0, 1: 4, 3: 0}, [], [x])
    assert ret != 0
    assert "group" in caplog.text
