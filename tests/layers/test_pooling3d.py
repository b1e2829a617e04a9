"""Pooling3D against the PyPI ncnn oracle: ncnn's test_pooling3d forms — max and average,
every pad_mode (0 full, 1 valid, 2 SAME_UPPER, 3 SAME_LOWER, whose depth ncnn pads the
SAME_UPPER way), count_include_pad on and off, per-axis kernel / stride / pads, global and
adaptive — bad params, and one run inside a Vulkan net."""

from __future__ import annotations

import pytest
from _vulkan_sandwich import check_in_vulkan_net
from _window_nd_cases import TOL, check_rejected
from oracle import check_layer, randn, rng

# (params without pooling_type, input shape (c, d, h, w))
WINDOWS = [
    ({1: 2, 2: 2}, (3, 6, 7, 8)),
    ({1: 3, 2: 2, 3: 1, 5: 0}, (3, 7, 8, 9)),  # full padding with a tail
    ({1: 3, 11: 2, 21: 2, 2: 2, 12: 1, 22: 3, 3: 1, 13: 0, 23: 1, 14: 0, 15: 1, 16: 0, 5: 1}, (2, 9, 7, 8)),
    ({1: 3, 2: 2, 5: 2}, (3, 7, 8, 9)),
    ({1: 4, 2: 3, 5: 3}, (3, 8, 9, 10)),
    ({1: 3, 2: 1, 3: 1, 5: 1, 6: 1}, (3, 5, 6, 7)),  # count_include_pad
    ({1: 3, 2: 2, 3: 1, 5: 0, 6: 1}, (3, 7, 8, 9)),
    ({1: 2, 2: 2}, (16, 8, 16, 16)),
]
GLOBAL_ADAPTIVE = [{4: 1}, {7: 1, 8: 3, 18: 4, 28: 2}, {7: 1, 8: 5}, {7: 1, 8: 6, 18: 7, 28: 5}]


@pytest.mark.parametrize("pooling_type", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("case", WINDOWS, ids=lambda c: str(c[0]))
def test_pooling3d_window(case, pooling_type):
    params, shape = case
    check_layer("Pooling3D", {0: pooling_type, **params}, [], [randn(rng("pool3d", shape), shape)], tol=TOL)


@pytest.mark.parametrize("pooling_type", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("params", GLOBAL_ADAPTIVE, ids=str)
def test_pooling3d_global_adaptive(params, pooling_type):
    x = randn(rng("pool3d-ga"), (4, 6, 7, 5))
    check_layer("Pooling3D", {0: pooling_type, **params}, [], [x], tol=TOL)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 2, 1: 2}, (2, 4, 4, 4), "pooling_type"),
        ({0: 0, 1: 2, 5: 4}, (2, 4, 4, 4), "pad_mode"),
        ({0: 0, 1: 2, 22: 0}, (2, 4, 4, 4), "stride_d"),
        ({0: 0, 7: 1, 8: 2, 28: 0}, (2, 4, 4, 4), "out_d"),
        ({0: 0, 1: 2}, (2, 4, 4), "4-D"),
        ({0: 0, 1: 5, 5: 1}, (2, 4, 4, 4), "smaller than the kernel"),
    ],
    ids=str,
)
def test_pooling3d_rejects(params, shape, key, caplog):
    check_rejected("Pooling3D", params, [], shape, key, caplog)


@pytest.mark.gpu
def test_pooling3d_in_vulkan_net():
    check_in_vulkan_net("Pooling3D", {0: 1, 1: 3, 2: 2, 3: 1}, [], [randn(rng("pool3d-vk"), (3, 7, 8, 9))])
