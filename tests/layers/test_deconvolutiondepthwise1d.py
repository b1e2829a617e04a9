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
from oracle import check_layer, randn, rng

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


# ncnn's test_deconvolutiondepthwise1d_dynamic: num_output, kernel_w and weight_data_size stay
# 0 and the weight blob (num_input, num_output / group, kernel_w) brings them; its (kernel,
# dilation, stride, pad) table times its (channels, num_output, bias, group, output_pad_right,
# output_w) list over w = 15, an output_w turning the pad into SAME_UPPER as there, the
# activation taking turns
NCNN_DYNAMIC_KDSP = [(1, 1, 1, 0), (1, 1, 2, 0), (2, 1, 1, 1), (2, 1, 2, -233), (3, 1, 1, 1), (3, 1, 2, 1)]
NCNN_DYNAMIC_KDSP += [(3, 2, 1, 1), (4, 1, 1, -233), (4, 1, 2, -234), (4, 2, 1, -234), (5, 1, 1, 2)]
NCNN_DYNAMIC_KDSP += [(5, 1, 2, 2), (5, 2, 2, 2), (7, 1, 1, 3), (7, 1, 2, 3), (7, 2, 1, -233)]
NCNN_DYNAMIC_SHAPES = [(1, 1, 1, 1, 0, 0), (2, 2, 0, 1, 1, 7), (2, 2, 1, 2, 1, 0), (3, 3, 0, 3, 0, 0)]
NCNN_DYNAMIC_SHAPES += [(4, 2, 1, 2, 0, 7), (4, 4, 0, 4, 2, 0), (7, 7, 1, 7, 2, 0), (8, 8, 0, 2, 0, 7)]
NCNN_DYNAMIC_SHAPES += [(8, 8, 1, 8, 0, 0), (12, 12, 0, 4, 3, 0), (15, 15, 1, 15, 3, 7), (16, 8, 0, 2, 0, 0)]
NCNN_DYNAMIC_SHAPES += [(16, 16, 1, 16, 0, 0)]
NCNN_DYNAMIC = [
    (kdsp, shape, sorted(ACTIVATIONS)[(i + j) % len(ACTIVATIONS)])
    for i, kdsp in enumerate(NCNN_DYNAMIC_KDSP)
    for j, shape in enumerate(NCNN_DYNAMIC_SHAPES)
]


def ncnn_dynamic_case(kdsp, shape, act):
    """(params, weights, inputs) of one of ncnn's dynamic cases: no weights, three inputs."""
    (k, d, s, p), (h, outh, bias, group, output_pad, output_w) = kdsp, shape
    if output_w > 0 and p not in (-233, -234):
        p = -233
    params = {0: 0, 1: 0, 2: d, 3: s, 4: p, 5: bias, 6: 0, 7: group, 18: output_pad, 20: output_w, 28: 1}
    g = rng("deconvolutiondepthwise1d-ncnn-dynamic", kdsp, shape, act)
    inputs = [randn(g, (h, 15)), randn(g, (h, outh // group, k))] + ([randn(g, (outh,))] if bias else [])
    return with_activation(params, act), [], inputs


def ncnn_dynamic_id(case) -> str:
    (k, d, s, p), (h, outh, bias, group, output_pad, output_w), act = case
    return f"k{k}-d{d}-s{s}-p{p}-h{h}-out{outh}-bias{bias}-g{group}-opad{output_pad}-outw{output_w}-act{act}"


# k7-d2-s1-p-233-h1-out1-bias1-g1-act1 keeps one output after the ReLU, a sum of 7 products
# that mostly cancel: rel L2 then measures the oracle's rounding (1.03e-5; ncnn_c is 3.8x nearer
# the float64 result), the other cases stay under 4e-7
NCNN_DYNAMIC_TOL = 1e-4


@pytest.mark.parametrize("case", NCNN_DYNAMIC, ids=ncnn_dynamic_id)
def test_deconvolutiondepthwise1d_dynamic_weight_ncnn(case):
    check_layer("DeconvolutionDepthWise1D", *ncnn_dynamic_case(*case), tol=NCNN_DYNAMIC_TOL)


@pytest.mark.gpu
@pytest.mark.parametrize("case", NCNN_DYNAMIC[-3:], ids=ncnn_dynamic_id)
def test_deconvolutiondepthwise1d_dynamic_weight_ncnn_in_vulkan_net(case):
    # a CPU-only layer in a Vulkan net, with params 0, 1 and 6 at 0
    check_in_vulkan_net("DeconvolutionDepthWise1D", *ncnn_dynamic_case(*case))
