"""Deconvolution3D against the PyPI ncnn oracle: ncnn's test_deconvolution3d geometry (kernel, dilation, stride, pads and output pads per axis, output size with SAME -233 / -234), every fused activation, bias on and off,
bad params, and one run inside a Vulkan net."""

from __future__ import annotations

import pytest
from _vulkan_sandwich import check_in_vulkan_net
from _window_nd_cases import ACTIVATIONS, TOL, check_rejected, conv_case, with_activation
from oracle import check_layer

# (params, input shape); weights are num_output * num_input / group * maxk
GEOMETRY = [
    ({0: 4, 1: 1}, (3, 4, 5, 6)),
    ({0: 5, 1: 3}, (4, 3, 4, 5)),
    (
        {0: 4, 1: 3, 11: 2, 21: 1, 3: 2, 13: 1, 23: 3, 4: 1, 14: 0, 24: 1, 17: 0},
        (3, 3, 5, 4),
    ),  # per-axis, pads
    ({0: 6, 1: 2, 2: 2, 12: 1, 22: 3, 3: 2, 18: 1, 19: 0, 20: 1}, (2, 4, 3, 5)),  # dilation, output_pad
    ({0: 4, 1: 3, 3: 2, 4: -233, 25: 8, 26: 9, 27: 7}, (3, 4, 5, 4)),  # output size, SAME_UPPER
    ({0: 4, 1: 4, 3: 3, 4: -234, 25: 11, 26: 10, 27: 9}, (3, 4, 4, 4)),  # output size, SAME_LOWER
    ({0: 8, 1: 3, 3: 2, 4: 1}, (16, 6, 8, 8)),
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
def test_deconvolution3d_geometry(geom, bias):
    params, shape = geom
    check_layer("Deconvolution3D", *conv_case("Deconvolution3D", params, shape, bias), tol=TOL)


@pytest.mark.parametrize("act", sorted(ACTIVATIONS), ids=lambda a: f"act{a}")
def test_deconvolution3d_activation(act):
    params = with_activation({0: 4, 1: 3, 3: 2, 4: 1}, act)
    check_layer("Deconvolution3D", *conv_case("Deconvolution3D", params, (3, 3, 4, 5), scale=4.0), tol=TOL)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 2, 1: 3, 6: 55}, (2, 4, 4, 4), "weight_data_size"),
        ({0: 2, 1: 3, 6: 108, 23: 0}, (2, 4, 4, 4), "stride_d"),
        ({0: 2, 1: 3, 6: 108, 20: -1}, (2, 4, 4, 4), "output_pad_behind"),
        ({0: 2, 1: 3, 6: 108, 4: -5}, (2, 4, 4, 4), "pad"),
        ({0: 2, 1: 3, 6: 108, 25: 3, 26: 3, 27: 3}, (2, 4, 4, 4), "SAME"),
        ({0: 2, 1: 3, 6: 108}, (2, 4, 4), "4-D"),
    ],
    ids=str,
)
def test_deconvolution3d_rejects(params, shape, key, caplog):
    check_rejected("Deconvolution3D", params, [([0.0] * params[6], 0)], shape, key, caplog)


@pytest.mark.gpu
def test_deconvolution3d_in_vulkan_net():
    check_in_vulkan_net(
        "Deconvolution3D", *conv_case("Deconvolution3D", {0: 4, 1: 3, 3: 2, 4: 1}, (3, 3, 4, 5))
    )


def test_deconvolution3d_fp16_weights():
    # weights stored as fp16 (ModelBin's type-0 flag), read back as the rounded fp32 values
    params, weights, inputs = conv_case("Deconvolution3D", {0: 4, 1: 3, 3: 2, 4: 1}, (3, 3, 4, 5))
    check_layer("Deconvolution3D", params, [(weights[0][0], "fp16"), weights[1]], inputs, tol=TOL)
