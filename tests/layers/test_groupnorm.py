"""GroupNorm against the PyPI ncnn oracle: every dims, group counts (a packed channel spanning
groups, a group spanning packed channels), affine on/off, segments long enough to be chunked on
the GPU, large offsets, bad blobs. One case list, every backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _norm_check import check_norm
from oracle import (
    GPU_GRID,
    SHAPES_ALL,
    backends,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_ncnn,
    run_net_gpu,
)

# exact fp32 sets for the large offsets, which fp16 cannot hold to the spread's precision
FP32 = ["fp32", "fp32-pack"]


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


def case(backend, shape, group, affine=1, eps=None, channels=None, offset=0.0):
    params, weights, inputs = groupnorm_case(shape, group, affine, eps, channels, offset)
    return check_norm(backend, "GroupNorm", params, weights, inputs, int(np.prod(shape)) // group == 1)


# (shape, group)
GROUPS = [
    ((64,), 8),
    ((16, 32), 4),
    ((16, 32), 16),  # packed rows: one spans 4 groups
    ((16, 8, 8), 4),
    ((16, 8, 8), 8),  # 2 channels a group: a packed channel spans 2 groups
    ((6, 5, 7), 3),
    ((4, 1, 6, 6), 2),
    ((8, 3, 5, 7), 8),
    ((32, 40, 40), 8),  # 6400 values a group: several chunks on the GPU
    ((32, 56, 56), 8),
    pytest.param((3, 227, 227), 3, marks=pytest.mark.slow, id="(3, 227, 227)-3"),
]


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (12,), (8, 3)], ids=str)
@pytest.mark.parametrize("backend", backends("GroupNorm"))
def test_groupnorm_one_group(shape, affine, backend):
    case(backend, shape, 1, affine)


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape,group", GROUPS, ids=str)
@pytest.mark.parametrize("backend", backends("GroupNorm"))
def test_groupnorm_groups(shape, group, affine, backend):
    case(backend, shape, group, affine)


@pytest.mark.parametrize("eps", [1e-5, 0.5])
@pytest.mark.parametrize("shape,offset", [((6, 9, 11), 50.0), ((8, 9, 11), 40.0)], ids=str)
@pytest.mark.parametrize("backend", backends("GroupNorm", grid=FP32))
def test_groupnorm_eps_and_offset(shape, offset, eps, backend):
    # a large common offset tests that the mean is taken before the variance
    case(backend, shape, 2, 1, eps=eps, offset=offset)


def test_groupnorm_rejects_channels_not_divisible(caplog):
    # ncnn's x86 layer fails load_param for 7 channels in 3 groups; so do we
    x = randn(rng("gn-div"), (7, 4, 5))
    params = {0: 3, 1: 7, 3: 0}
    assert run_ncnn(make_param("GroupNorm", params, [x.shape]), make_bin([]), [x])[0] != 0
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("GroupNorm", params, [], [x])
    assert ret != 0
    assert "group 3" in caplog.text


def test_groupnorm_rejects_wrong_channels(caplog):
    x = randn(rng("gn-bad"), (5, 4, 4))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("GroupNorm", {0: 2, 1: 4, 3: 0}, [], [x])
    assert ret != 0
    assert "GroupNorm" in caplog.text and "channels" in caplog.text


@pytest.mark.gpu
def test_groupnorm_rejects_wrong_channels_on_the_gpu(caplog):
    g = rng("gn-bad-vk")
    weights = [(randn(g, (4,)), 1), (randn(g, (4,)), 1)]
    x = randn(g, (8, 3, 3))
    text = make_param("GroupNorm", {0: 2, 1: 4}, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin(weights), [x], 1, **GPU_GRID["fp16s-pack"])
    assert ret != 0 and "expected 4 channels" in caplog.text


def test_groupnorm_rejects_bad_group(caplog):
    x = randn(rng("gn-bad2"), (4, 4, 4))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("GroupNorm", {0: 0, 1: 4, 3: 0}, [], [x])
    assert ret != 0
    assert "group" in caplog.text
