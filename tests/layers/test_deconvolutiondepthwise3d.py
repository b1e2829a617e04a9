"""DeconvolutionDepthWise3D against the PyPI ncnn oracle: depthwise and grouped cases over ncnn's test_deconvolutiondepthwise3d geometry, every fused activation, bias on and off,
bad params, and one run inside a Vulkan net."""

from __future__ import annotations

import pytest
from _vulkan_sandwich import check_in_vulkan_net
from _window_nd_cases import ACTIVATIONS, TOL, check_rejected, conv_case, with_activation
from oracle import check_layer

# (params, input shape); weights are num_output * num_input / group * maxk
GEOMETRY = [
    ({0: 3, 1: 1, 7: 3}, (3, 4, 5, 6)),
    ({0: 8, 1: 3, 7: 4}, (4, 3, 4, 5)),
    (
        {0: 6, 1: 3, 11: 2, 21: 1, 3: 2, 13: 1, 23: 3, 4: 1, 14: 0, 24: 1, 17: 0, 7: 3},
        (3, 3, 5, 4),
    ),  # per-axis, pads
    ({0: 6, 1: 2, 2: 2, 12: 1, 22: 3, 3: 2, 18: 1, 19: 0, 20: 1, 7: 2}, (2, 4, 3, 5)),  # dilation, output_pad
    ({0: 4, 1: 3, 3: 2, 4: -233, 25: 8, 26: 9, 27: 7, 7: 1}, (3, 4, 5, 4)),  # output size, SAME_UPPER
    ({0: 6, 1: 4, 3: 3, 4: -234, 25: 11, 26: 10, 27: 9, 7: 3}, (3, 4, 4, 4)),  # output size, SAME_LOWER
    ({0: 16, 1: 3, 3: 2, 4: 1, 7: 16}, (16, 6, 8, 8)),
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
def test_deconvolutiondepthwise3d_geometry(geom, bias):
    params, shape = geom
    check_layer(
        "DeconvolutionDepthWise3D", *conv_case("DeconvolutionDepthWise3D", params, shape, bias), tol=TOL
    )


@pytest.mark.parametrize("act", sorted(ACTIVATIONS), ids=lambda a: f"act{a}")
def test_deconvolutiondepthwise3d_activation(act):
    params = with_activation({0: 3, 1: 3, 3: 2, 4: 1, 7: 3}, act)
    check_layer(
        "DeconvolutionDepthWise3D",
        *conv_case("DeconvolutionDepthWise3D", params, (3, 3, 4, 5), scale=4.0),
        tol=TOL,
    )


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 2, 1: 3, 6: 55}, (2, 4, 4, 4), "weight_data_size"),
        ({0: 2, 1: 3, 6: 108, 23: 0}, (2, 4, 4, 4), "stride_d"),
        ({0: 2, 1: 3, 6: 108, 20: -1}, (2, 4, 4, 4), "output_pad_behind"),
        ({0: 2, 1: 3, 6: 108, 4: -5}, (2, 4, 4, 4), "pad"),
        ({0: 2, 1: 3, 6: 108, 25: 3, 26: 3, 27: 3}, (2, 4, 4, 4), "SAME"),
        ({0: 2, 1: 3, 6: 50, 7: 2}, (2, 4, 4, 4), "weight_data_size"),
        ({0: 3, 1: 3, 6: 81, 7: 2}, (2, 4, 4, 4), "num_output"),
    ],
    ids=str,
)
def test_deconvolutiondepthwise3d_rejects(params, shape, key, caplog):
    check_rejected("DeconvolutionDepthWise3D", params, [([0.0] * params[6], 0)], shape, key, caplog)


@pytest.mark.gpu
def test_deconvolutiondepthwise3d_in_vulkan_net():
    check_in_vulkan_net(
        "DeconvolutionDepthWise3D",
        *conv_case("DeconvolutionDepthWise3D", {0: 3, 1: 3, 3: 2, 4: 1, 7: 3}, (3, 3, 4, 5)),
    )
