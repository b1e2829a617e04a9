"""DeconvolutionDepthWise1D against the PyPI ncnn oracle: depthwise and grouped cases over ncnn's test_deconvolutiondepthwise1d geometry, every fused activation, bias on and off,
bad params, and one run inside a Vulkan net."""

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
from oracle import check_layer

# (params, input shape); weights are num_output * num_input / group * maxk
GEOMETRY = [
    ({0: 3, 1: 1, 7: 3}, (3, 9)),
    ({0: 8, 1: 3, 7: 4}, (4, 20)),
    ({0: 6, 1: 4, 3: 2, 2: 2, 18: 1, 7: 3}, (3, 17)),  # strided, dilated, output_pad
    ({0: 4, 1: 3, 3: 2, 4: 2, 15: 1, 7: 1}, (3, 11)),  # asymmetric pads
    ({0: 6, 1: 4, 3: 2, 4: -233, 20: 30, 7: 3}, (3, 17)),  # output_w, SAME_UPPER
    ({0: 3, 1: 4, 3: 3, 4: -234, 20: 50, 7: 3}, (3, 17)),  # output_w, SAME_LOWER
    ({0: 16, 1: 5, 3: 2, 4: 2, 7: 16}, (16, 227)),
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
def test_deconvolutiondepthwise1d_geometry(geom, bias):
    params, shape = geom
    check_layer(
        "DeconvolutionDepthWise1D", *conv_case("DeconvolutionDepthWise1D", params, shape, bias), tol=TOL
    )


@pytest.mark.parametrize("act", sorted(ACTIVATIONS), ids=lambda a: f"act{a}")
def test_deconvolutiondepthwise1d_activation(act):
    params = with_activation({0: 3, 1: 3, 3: 2, 4: 1, 7: 3}, act)
    check_layer(
        "DeconvolutionDepthWise1D",
        *conv_case("DeconvolutionDepthWise1D", params, (3, 15), scale=4.0),
        tol=TOL,
    )


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
def test_deconvolutiondepthwise1d_rejects(params, shape, key, caplog):
    check_rejected("DeconvolutionDepthWise1D", params, [([0.0] * params[6], 0)], shape, key, caplog)


@pytest.mark.gpu
def test_deconvolutiondepthwise1d_in_vulkan_net():
    check_in_vulkan_net(
        "DeconvolutionDepthWise1D",
        *conv_case("DeconvolutionDepthWise1D", {0: 3, 1: 3, 3: 2, 4: 1, 7: 3}, (3, 15)),
    )


# (params with 28 = 1, weight blob (num_input, num_output / group, kernel_w), bias)
DYNAMIC = [
    ({0: 4, 1: 3, 7: 4, 28: 1}, (4, 1, 3), False),
    ({0: 6, 1: 3, 7: 2, 28: 1, 2: 2, 4: 1}, (4, 3, 3), True),
]


@pytest.mark.parametrize("case", DYNAMIC, ids=lambda c: str(c[0]))
def test_deconvolutiondepthwise1d_dynamic_weight(case):
    params, weight_shape, bias = case
    check_dynamic_weight("DeconvolutionDepthWise1D", params, weight_shape, bias, (4, 20))


@pytest.mark.parametrize("shapes", [[(4, 8), (4, 3)], [(4, 8), (3, 1, 3)], [(4, 8)]], ids=str)
def test_deconvolutiondepthwise1d_dynamic_rejects(shapes, caplog):
    check_dynamic_rejected("DeconvolutionDepthWise1D", {0: 4, 1: 3, 7: 2, 28: 1, 6: 12}, shapes, caplog)
