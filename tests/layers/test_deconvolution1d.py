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
from oracle import backends, check, check_layer, randn, rng

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


# ncnn's test_deconvolution1d_dynamic: num_output, kernel_w and weight_data_size stay 0 and
# the weight blob (num_input, num_output, kernel_w) brings them; its (kernel, dilation, stride,
# pad) table times its (channels, num_output, bias, output_pad_right, output_w) list over
# w = 9, an output_w turning the pad into SAME_UPPER as there, the activation taking turns
NCNN_DYNAMIC_KDSP = [(1, 1, 1, 0), (1, 1, 2, 0), (2, 1, 1, 1), (2, 1, 2, -233), (3, 1, 1, 1), (3, 1, 2, 1)]
NCNN_DYNAMIC_KDSP += [(3, 2, 1, 1), (4, 1, 1, -233), (4, 1, 2, -234), (4, 2, 1, -234), (5, 1, 1, 2)]
NCNN_DYNAMIC_KDSP += [(5, 1, 2, 2), (5, 2, 2, 2), (7, 1, 1, 3), (7, 1, 2, 3), (7, 2, 1, -233)]
NCNN_DYNAMIC_SHAPES = [(1, 1, 1, 0, 0), (4, 13, 0, 1, 7), (13, 4, 1, 1, 0), (4, 8, 0, 0, 0)]
NCNN_DYNAMIC_SHAPES += [(8, 4, 1, 0, 7), (8, 13, 0, 2, 0), (13, 8, 1, 2, 0), (16, 16, 0, 0, 7)]
NCNN_DYNAMIC = [
    (kdsp, shape, sorted(ACTIVATIONS)[(i + j) % len(ACTIVATIONS)])
    for i, kdsp in enumerate(NCNN_DYNAMIC_KDSP)
    for j, shape in enumerate(NCNN_DYNAMIC_SHAPES)
]


def ncnn_dynamic_case(kdsp, shape, act):
    """(params, weights, inputs) of one of ncnn's dynamic cases: no weights, three inputs."""
    (k, d, s, p), (h, outh, bias, output_pad, output_w) = kdsp, shape
    if output_w > 0 and p not in (-233, -234):
        p = -233
    params = {0: 0, 1: 0, 2: d, 3: s, 4: p, 5: bias, 6: 0, 18: output_pad, 20: output_w, 28: 1}
    g = rng("deconvolution1d-ncnn-dynamic", kdsp, shape, act)
    inputs = [randn(g, (h, 9)), randn(g, (h, outh, k))] + ([randn(g, (outh,))] if bias else [])
    return with_activation(params, act), [], inputs


def ncnn_dynamic_id(case) -> str:
    (k, d, s, p), (h, outh, bias, output_pad, output_w), act = case
    return f"k{k}-d{d}-s{s}-p{p}-h{h}-out{outh}-bias{bias}-opad{output_pad}-outw{output_w}-act{act}"


@pytest.mark.parametrize("case", NCNN_DYNAMIC, ids=ncnn_dynamic_id)
def test_deconvolution1d_dynamic_weight_ncnn(case):
    check_layer("Deconvolution1D", *ncnn_dynamic_case(*case), tol=TOL)


@pytest.mark.gpu
@pytest.mark.parametrize("case", NCNN_DYNAMIC[-3:], ids=ncnn_dynamic_id)
def test_deconvolution1d_dynamic_weight_ncnn_in_vulkan_net(case):
    # params 0, 1 and 6 at 0: the GPU class hands the layer to the CPU before it would use them
    check_in_vulkan_net("Deconvolution1D", *ncnn_dynamic_case(*case))
