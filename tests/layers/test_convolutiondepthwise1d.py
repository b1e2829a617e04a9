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
from oracle import backends, check, check_layer, randn, rng

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


# ncnn's test_convolutiondepthwise1d_dynamic: num_output, kernel_w and weight_data_size stay 0
# and the weight blob (num_output, num_input / group, kernel_w) brings them; its (kernel,
# dilation, stride, pad) table times its (channels, num_output, bias, group) list over w = 11,
# the activation taking turns over the cases
NCNN_DYNAMIC_KDSP = [(1, 1, 1, 0), (1, 1, 2, 0), (2, 1, 1, 1), (2, 1, 2, -233), (3, 1, 1, 1), (3, 1, 2, 1)]
NCNN_DYNAMIC_KDSP += [(3, 2, 1, -234)]
NCNN_DYNAMIC_SHAPES = [(1, 1, 1, 1), (2, 2, 0, 1), (2, 2, 1, 2), (3, 3, 0, 3), (4, 2, 1, 2), (4, 4, 0, 4)]
NCNN_DYNAMIC_SHAPES += [(7, 7, 1, 7), (8, 8, 0, 2), (8, 8, 1, 8), (12, 12, 0, 4), (15, 15, 1, 15)]
NCNN_DYNAMIC_SHAPES += [(16, 8, 0, 2), (16, 16, 1, 16)]
NCNN_DYNAMIC = [
    (kdsp, shape, sorted(ACTIVATIONS)[(i + j) % len(ACTIVATIONS)])
    for i, kdsp in enumerate(NCNN_DYNAMIC_KDSP)
    for j, shape in enumerate(NCNN_DYNAMIC_SHAPES)
]


def ncnn_dynamic_case(kdsp, shape, act):
    """(params, weights, inputs) of one of ncnn's dynamic cases: no weights, three inputs."""
    (k, d, s, p), (h, outh, bias, group) = kdsp, shape
    params = with_activation({0: 0, 1: 0, 2: d, 3: s, 4: p, 5: bias, 6: 0, 7: group, 19: 1}, act)
    g = rng("convolutiondepthwise1d-ncnn-dynamic", kdsp, shape, act)
    inputs = [randn(g, (h, 11)), randn(g, (outh, h // group, k))] + ([randn(g, (outh,))] if bias else [])
    return params, [], inputs


def ncnn_dynamic_id(case) -> str:
    (k, d, s, p), (h, outh, bias, group), act = case
    return f"k{k}-d{d}-s{s}-p{p}-h{h}-out{outh}-bias{bias}-g{group}-act{act}"


@pytest.mark.parametrize("case", NCNN_DYNAMIC, ids=ncnn_dynamic_id)
def test_convolutiondepthwise1d_dynamic_weight_ncnn(case):
    check_layer("ConvolutionDepthWise1D", *ncnn_dynamic_case(*case), tol=TOL)


@pytest.mark.gpu
@pytest.mark.parametrize("case", NCNN_DYNAMIC[-3:], ids=ncnn_dynamic_id)
def test_convolutiondepthwise1d_dynamic_weight_ncnn_in_vulkan_net(case):
    # params 0, 1 and 6 at 0: the GPU class hands the layer to the CPU before it would use them
    check_in_vulkan_net("ConvolutionDepthWise1D", *ncnn_dynamic_case(*case))
