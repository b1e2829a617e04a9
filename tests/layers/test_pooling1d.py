"""Pooling1D against the PyPI ncnn oracle: ncnn's test_pooling1d forms — max and average,
every pad_mode, count_include_pad on and off, asymmetric pads, global and adaptive — bad
params, and one run inside a Vulkan net."""

from __future__ import annotations

import pytest
from _vulkan_sandwich import check_in_vulkan_net
from _window_nd_cases import TOL, check_rejected
from oracle import check_layer, randn, rng

# (params without pooling_type, input shape (h, w))
WINDOWS = [
    ({1: 2, 2: 2}, (3, 16)),
    ({1: 3, 2: 2, 3: 1, 5: 0}, (3, 17)),  # full padding with a tail
    ({1: 3, 2: 2, 3: 2, 14: 0, 5: 1}, (4, 19)),
    ({1: 3, 2: 2, 5: 2}, (3, 17)),
    ({1: 4, 2: 3, 5: 3}, (3, 20)),
    ({1: 3, 2: 1, 3: 1, 5: 1, 6: 1}, (3, 11)),  # count_include_pad
    ({1: 3, 2: 2, 3: 1, 5: 0, 6: 1}, (3, 17)),
    ({1: 5, 2: 2, 3: 2}, (16, 227)),
]
GLOBAL_ADAPTIVE = [{4: 1}, {7: 1, 8: 5}, {7: 1, 8: 13}]


@pytest.mark.parametrize("pooling_type", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("case", WINDOWS, ids=lambda c: str(c[0]))
def test_pooling1d_window(case, pooling_type):
    params, shape = case
    check_layer("Pooling1D", {0: pooling_type, **params}, [], [randn(rng("pool1d", shape), shape)], tol=TOL)


@pytest.mark.parametrize("pooling_type", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("params", GLOBAL_ADAPTIVE, ids=str)
def test_pooling1d_global_adaptive(params, pooling_type):
    x = randn(rng("pool1d-ga"), (4, 11))
    check_layer("Pooling1D", {0: pooling_type, **params}, [], [x], tol=TOL)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 3, 1: 2}, (2, 8), "pooling_type"),
        ({0: 0, 1: 2, 5: -1}, (2, 8), "pad_mode"),
        ({0: 0, 1: 0}, (2, 8), "kernel_w"),
        ({0: 0, 7: 1, 8: 0}, (2, 8), "out_w"),
        ({0: 0, 1: 2}, (2, 2, 8), "2-D"),
    ],
    ids=str,
)
def test_pooling1d_rejects(params, shape, key, caplog):
    check_rejected("Pooling1D", params, [], shape, key, caplog)


@pytest.mark.gpu
def test_pooling1d_in_vulkan_net():
    check_in_vulkan_net("Pooling1D", {0: 1, 1: 3, 2: 2, 3: 1}, [], [randn(rng("pool1d-vk"), (3, 17))])
