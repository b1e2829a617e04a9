"""ConvolutionDepthWise1D against the PyPI ncnn oracle: depthwise and grouped cases over
ncnn's test_convolutiondepthwise1d geometry (kernel, dilation, stride, pads, SAME, pad_value),
activations, each on every backend (oracle.backends: the CPU and the GPU option grid); bad
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

GEOMETRY = [
    ({0: 4, 1: 1, 7: 4}, (4, 9)),
    ({0: 6, 1: 3, 4: 1, 7: 6}, (6, 20)),
    ({0: 8, 1: 4, 3: 2, 2: 2, 7: 2}, (4, 17)),  # grouped, strided, dilated
    ({0: 6, 1: 3, 4: 2, 15: 0, 18: -0.5, 7: 3}, (3, 11)),  # asymmetric pads, pad_value, 2 per channel
    ({0: 4, 1: 4, 3: 2, 4: -233, 7: 4}, (4, 17)),
    ({0: 4, 1: 4, 3: 3, 4: -234, 7: 4}, (4, 17)),
    ({0: 16, 1: 5, 4: 2, 7: 16}, (16, 227)),
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise1D"))
def test_convolutiondepthwise1d_geometry(geom, bias, backend):
    params, shape = geom
    check(
        backend, "ConvolutionDepthWise1D", *conv_case("ConvolutionDepthWise1D", params, shape, bias), tol=TOL
    )


@pytest.mark.parametrize("act", sorted(ACTIVATIONS), ids=lambda a: f"act{a}")
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise1D"))
def test_convolutiondepthwise1d_activation(act, backend):
    params = with_activation({0: 4, 1: 3, 4: 1, 7: 4}, act)
    case = conv_case("ConvolutionDepthWise1D", params, (4, 15), scale=4.0)
    check(backend, "ConvolutionDepthWise1D", *case, tol=TOL)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 4, 1: 3, 6: 13, 7: 4}, (4, 8), "weight_data_size"),
        ({0: 4, 1: 3, 6: 12, 7: 4, 3: 0}, (4, 8), "stride_w"),
        ({0: 4, 1: 3, 6: 12, 7: 4}, (4, 2, 8), "2-D"),
    ],
    ids=str,
)
def test_convolutiondepthwise1d_rejects(params, shape, key, caplog):
    check_rejected("ConvolutionDepthWise1D", params, [([0.0] * params[6], 0)], shape, key, caplog)


# (params with 19 = 1, weight blob (num_output, num_input / group, kernel_w), bias)
DYNAMIC = [
    ({0: 4, 1: 3, 7: 4, 19: 1, 4: 1}, (4, 1, 3), False),
    ({0: 8, 1: 3, 7: 2, 19: 1, 3: 2}, (8, 2, 3), True),
]


@pytest.mark.parametrize("case", DYNAMIC, ids=lambda c: str(c[0]))
def test_convolutiondepthwise1d_dynamic_weight(case):
    params, weight_shape, bias = case
    check_dynamic_weight("ConvolutionDepthWise1D", params, weight_shape, bias, (4, 20))


@pytest.mark.gpu
def test_convolutiondepthwise1d_dynamic_weight_in_vulkan_net():
    # not a GPU form (as in ncnn): the Vulkan net runs the layer on the CPU between GPU layers
    g = rng("convolutiondepthwise1d-dynamic-vk")
    inputs = [randn(g, (4, 20)), randn(g, (8, 2, 3)), randn(g, (8,))]
    check_in_vulkan_net("ConvolutionDepthWise1D", {0: 8, 1: 3, 7: 2, 19: 1, 3: 2, 5: 1, 6: 48}, [], inputs)


@pytest.mark.parametrize("shapes", [[(4, 8), (4, 3)], [(4, 8), (3, 1, 3)], [(4, 8)]], ids=str)
def test_convolutiondepthwise1d_dynamic_rejects(shapes, caplog):
    check_dynamic_rejected("ConvolutionDepthWise1D", {0: 4, 1: 3, 7: 2, 19: 1, 6: 12}, shapes, caplog)
