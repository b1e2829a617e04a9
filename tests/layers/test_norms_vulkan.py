"""GroupNorm, InstanceNorm and LayerNorm on the GPU (the shared meanvar passes) over the
option grid against the PyPI ncnn CPU fp32 oracle: every dims, channel counts divisible by 4
(packed) and not, group counts, LayerNorm's slice forms, affine on/off, segments long enough
to split into chunks (the combine pass), large offsets (fp32 sets), bad blobs. LayerNorm's
cases are test_layernorm.py's, with more."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import GPU_GRID, SHAPES_ALL, check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu
from test_groupnorm import GROUPS, groupnorm_case
from test_instancenorm import instancenorm_case
from test_layernorm import CASES, EPS_VALUES, eps_and_offset_cases, layernorm_case

pytestmark = pytest.mark.gpu

FP32 = ["fp32", "fp32-pack"]


def _zeros_check(layer_type, params, x):
    """One value per segment normalises to exactly 0; ncnn's fused multiply-add leaves a
    ~1e-6 residue there, which a relative error cannot compare: check absolutely."""
    text = make_param(layer_type, params, [x.shape], 1)
    for flags in GPU_GRID.values():
        ret, (y,) = run_net_gpu(text, make_bin([]), [x], 1, **flags)
        assert ret == 0 and y.shape == x.shape and np.abs(y).max() <= 1e-5


def _weights(g, n, affine):
    return [(randn(g, (n,)), 1), (randn(g, (n,)), 1)] if affine else []


# -- GroupNorm ---------------------------------------------------------------------------------


def groupnorm(shape, group, affine=1, offset=0.0, grid=None, eps=None):
    params, weights, inputs = groupnorm_case(shape, group, affine, eps, offset=offset)
    if int(np.prod(shape)) // group == 1 and not affine:
        return _zeros_check("GroupNorm", params, inputs[0])
    return check_layer_gpu("GroupNorm", params, weights, inputs, grid=grid)


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (12,), (8, 3)], ids=str)
def test_groupnorm_one_group(shape, affine):
    groupnorm(shape, 1, affine)


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize(
    "shape,group",
    # test_groupnorm.py's, where (16, 32) in 16 groups has one packed row span 4 groups, plus
    GROUPS
    + [
        ((16, 8, 8), 8),  # 2 channels a group: a packed channel spans 2 groups
        ((32, 40, 40), 8),  # 6400 values a group: several chunks
    ],
    ids=str,
)
def test_groupnorm_groups(shape, group, affine):
    groupnorm(shape, group, affine)


def test_groupnorm_offset():
    groupnorm((8, 9, 11), 2, 1, offset=40.0, grid=FP32, eps=1e-5)


# -- InstanceNorm ------------------------------------------------------------------------------


def instancenorm(shape, affine=1, offset=0.0, grid=None, eps=None):
    params, weights, inputs = instancenorm_case(shape, affine, eps, offset)
    if int(np.prod(shape)) // params[0] == 1 and not affine:
        return _zeros_check("InstanceNorm", params, inputs[0])
    return check_layer_gpu("InstanceNorm", params, weights, inputs, grid=grid)


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (12,), (8, 3), (4, 2, 3, 5)], ids=str)
def test_instancenorm(shape, affine):
    instancenorm(shape, affine)


@pytest.mark.parametrize("eps", [1e-5, 0.5])
def test_instancenorm_eps_and_offset(eps):
    instancenorm((8, 9, 11), 1, offset=40.0, grid=FP32, eps=eps)
    instancenorm((3, 2, 9, 11), 0, offset=-40.0, grid=FP32, eps=eps)


# -- LayerNorm ---------------------------------------------------------------------------------


def layernorm(shape, affine_size, affine=1, offset=0.0, grid=None, eps=None):
    params, weights, inputs = layernorm_case(shape, affine_size, affine, eps, offset)
    if affine_size == 1 and not affine:
        return _zeros_check("LayerNorm", params, inputs[0])
    return check_layer_gpu("LayerNorm", params, weights, inputs, grid=grid)


# test_layernorm.py's cases, plus chunked segments and packed channels
LN_CASES = CASES + [
    ((3000,), 3000),  # three chunks
    ((8, 5, 7), 7),
    ((8, 5, 7), 35),
    ((8, 3, 5, 7), 35),
]


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape,affine_size", LN_CASES, ids=str)
def test_layernorm(shape, affine_size, affine):
    layernorm(shape, affine_size, affine)


@pytest.mark.parametrize("eps", EPS_VALUES)
def test_layernorm_eps_and_offset(eps):
    for case in eps_and_offset_cases(eps):
        check_layer_gpu("LayerNorm", *case, grid=FP32)


# -- large blobs and the non-light path ------------------------------------------------------


@pytest.mark.slow
def test_big_blobs():
    instancenorm((3, 227, 227), 1)
    groupnorm((3, 227, 227), 3, 1)
    layernorm((3, 227, 227), 227 * 227, 1)


def test_not_in_place():
    g = rng("norm-nl")
    x = randn(g, (8, 5, 7))
    check_layer_gpu("InstanceNorm", {0: 8}, _weights(g, 8, 1), [x], lightmode=False)


# -- bad blobs -----------------------------------------------------------------------------------


def _run(layer_type, params, weights, x):
    text = make_param(layer_type, params, [x.shape], 1)
    return run_net_gpu(text, make_bin(weights), [x], 1, **GPU_GRID["fp16s-pack"])


def test_groupnorm_rejects_wrong_channels(caplog):
    g = rng("gn-bad-vk")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = _run("GroupNorm", {0: 2, 1: 4}, _weights(g, 4, 1), randn(g, (8, 3, 3)))
    assert ret != 0 and "expected 4 channels" in caplog.text


def test_instancenorm_rejects_wrong_channels(caplog):
    g = rng("in-bad-vk")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = _run("InstanceNorm", {0: 4}, _weights(g, 4, 1), randn(g, (8, 3, 3)))
    assert ret != 0 and "blob has 8 channels" in caplog.text


def test_layernorm_rejects_mismatched_affine_size(caplog):
    g = rng("ln-bad-vk")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = _run("LayerNorm", {0: 7}, _weights(g, 7, 1), randn(g, (8, 4, 5)))
    assert ret != 0 and "affine_size 7 does not match" in caplog.text
