"""ConvolutionDepthWise3D against the PyPI ncnn oracle: depthwise (group = channels) and
grouped cases over ncnn's test_convolutiondepthwise3d geometry, activations, bad params, and
one run inside a Vulkan net."""

from __future__ import annotations

import pytest
from _vulkan_sandwich import check_in_vulkan_net
from _window_nd_cases import ACTIVATIONS, TOL, check_rejected, conv_case, with_activation
from oracle import check_layer

GEOMETRY = [
    ({0: 4, 1: 1, 7: 4}, (4, 4, 5, 6)),
    ({0: 6, 1: 3, 4: 1, 7: 6}, (6, 6, 7, 5)),
    ({0: 8, 1: 3, 11: 2, 21: 1, 3: 2, 13: 1, 23: 2, 7: 2}, (4, 7, 6, 9)),  # grouped, per-axis
    ({0: 6, 1: 2, 2: 2, 22: 3, 4: 1, 24: 2, 17: 0, 7: 3}, (3, 9, 8, 7)),  # 2 outputs per channel
    ({0: 4, 1: 3, 3: 2, 4: -233, 7: 4}, (4, 7, 8, 9)),
    ({0: 4, 1: 4, 3: 3, 4: -234, 7: 2, 18: 0.25}, (4, 8, 7, 10)),
    ({0: 16, 1: 3, 4: 1, 7: 16}, (16, 8, 12, 12)),
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
def test_convolutiondepthwise3d_geometry(geom, bias):
    params, shape = geom
    check_layer("ConvolutionDepthWise3D", *conv_case("ConvolutionDepthWise3D", params, shape, bias), tol=TOL)


@pytest.mark.parametrize("act", sorted(ACTIVATIONS), ids=lambda a: f"act{a}")
def test_convolutiondepthwise3d_activation(act):
    params = with_activation({0: 4, 1: 3, 4: 1, 7: 4}, act)
    check_layer(
        "ConvolutionDepthWise3D",
        *conv_case("ConvolutionDepthWise3D", params, (4, 5, 6, 7), scale=4.0),
        tol=TOL,
    )


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 4, 1: 3, 6: 100, 7: 4}, (4, 4, 4, 4), "weight_data_size"),
        ({0: 5, 1: 3, 6: 135, 7: 2}, (4, 4, 4, 4), "num_output"),
        ({0: 4, 1: 3, 6: 108, 7: 0}, (4, 4, 4, 4), "group"),
        ({0: 4, 1: 3, 6: 108, 7: 4}, (3, 4, 4, 4), "input channels"),
    ],
    ids=str,
)
def test_convolutiondepthwise3d_rejects(params, shape, key, caplog):
    check_rejected("ConvolutionDepthWise3D", params, [([0.0] * params[6], 0)], shape, key, caplog)


@pytest.mark.gpu
def test_convolutiondepthwise3d_in_vulkan_net():
    case = conv_case("ConvolutionDepthWise3D", {0: 4, 1: 3, 4: 1, 7: 4}, (4, 5, 6, 7))
    check_in_vulkan_net("ConvolutionDepthWise3D", *case)
