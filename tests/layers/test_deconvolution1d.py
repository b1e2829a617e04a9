"""Deconvolution1D against the PyPI ncnn oracle: ncnn's test_deconvolution1d geometry (kernel,
dilation, stride, pads, output_pad, output_w with SAME -233 / -234), every fused activation,
bias on and off, each on every backend (oracle.backends: the CPU and the GPU option grid); bad
params. dynamic_weight (weights as input blobs) is not a GPU form: a Vulkan net runs that
layer on the CPU, checked here inside one."""

from __future__ import annotations

import pytest
from _vulkan_sandwich import check_in_vulkan_net
from _window_nd_cases import (
    ACTIVATIONS,
    TOL,
    check_dynamic_rejected,
    check_dynamic_weight,
    check_rejected,
    conv_case,
    with_activation,
)
from oracle import backends, check, randn, rng

# (params, input shape); weights are num_output * num_input / group * maxk
GEOMETRY = [
    ({0: 4, 1: 1}, (3, 9)),
    ({0: 5, 1: 3}, (4, 20)),
    ({0: 6, 1: 4, 3: 2, 2: 2, 18: 1}, (3, 17)),  # strided, dilated, output_pad
    ({0: 4, 1: 3, 3: 2, 4: 2, 15: 1}, (3, 11)),  # asymmetric pads
    ({0: 4, 1: 4, 3: 2, 4: -233, 20: 30}, (3, 17)),  # output_w, SAME_UPPER
    ({0: 4, 1: 4, 3: 3, 4: -234, 20: 50}, (3, 17)),  # output_w, SAME_LOWER
    ({0: 16, 1: 5, 3: 2, 4: 2}, (16, 227)),
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
@pytest.mark.parametrize("backend", backends("Deconvolution1D"))
def test_deconvolution1d_geometry(geom, bias, backend):
    params, shape = geom
    check(backend, "Deconvolution1D", *conv_case("Deconvolution1D", params, shape, bias), tol=TOL)


@pytest.mark.parametrize("act", sorted(ACTIVATIONS), ids=lambda a: f"act{a}")
@pytest.mark.parametrize("backend", backends("Deconvolution1D"))
def test_deconvolution1d_activation(act, backend):
    params = with_activation({0: 4, 1: 3, 3: 2, 4: 1}, act)
    check(backend, "Deconvolution1D", *conv_case("Deconvolution1D", params, (3, 15), scale=4.0), tol=TOL)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 2, 1: 3, 6: 13}, (2, 8), "weight_data_size"),
        ({0: 2, 1: 3, 6: 12, 3: 0}, (2, 8), "stride_w"),
        ({0: 2, 1: 3, 6: 12, 18: -1}, (2, 8), "output_pad_right"),
        ({0: 2, 1: 3, 6: 12}, (3, 8), "input channels"),
        ({0: 2, 1: 3, 6: 12}, (2, 2, 8), "2-D"),
    ],
    ids=str,
)
def test_deconvolution1d_rejects(params, shape, key, caplog):
    check_rejected("Deconvolution1D", params, [([0.0] * params[6], 0)], shape, key, caplog)


# (params with 28 = 1, weight blob (num_input, num_output / group, kernel_w), bias)
DYNAMIC = [
    ({0: 6, 1: 3, 28: 1, 3: 2, 4: 1}, (4, 6, 3), True),
    ({0: 5, 1: 2, 28: 1, 2: 2, 18: 1}, (4, 5, 2), False),
]


@pytest.mark.parametrize("case", DYNAMIC, ids=lambda c: str(c[0]))
def test_deconvolution1d_dynamic_weight(case):
    params, weight_shape, bias = case
    check_dynamic_weight("Deconvolution1D", params, weight_shape, bias, (4, 20))


@pytest.mark.gpu
def test_deconvolution1d_dynamic_weight_in_vulkan_net():
    # not a GPU form (as in ncnn): the Vulkan net runs the layer on the CPU between GPU layers
    g = rng("deconvolution1d-dynamic-vk")
    inputs = [randn(g, (4, 20)), randn(g, (4, 6, 3)), randn(g, (6,))]
    check_in_vulkan_net("Deconvolution1D", {0: 6, 1: 3, 28: 1, 3: 2, 4: 1, 5: 1, 6: 72}, [], inputs)


@pytest.mark.parametrize("shapes", [[(4, 8), (4, 3)], [(4, 8), (4, 2, 3), (5,)], [(4, 8)]], ids=str)
def test_deconvolution1d_dynamic_rejects(shapes, caplog):
    check_dynamic_rejected("Deconvolution1D", {0: 4, 1: 3, 5: 1, 28: 1, 6: 12}, shapes, caplog)
