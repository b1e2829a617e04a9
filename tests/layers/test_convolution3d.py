"""Convolution3D against the PyPI ncnn oracle: ncnn's test_convolution3d cases (kernel,
dilation, stride, pads per axis, SAME -233 / -234, pad_value), every fused activation, bias
on and off, each on every backend (oracle.backends: the CPU and the GPU option grid); bad
params; fp16-stored weights."""

from __future__ import annotations

import pytest
from _window_nd_cases import ACTIVATIONS, TOL, check_rejected, conv_case, with_activation
from oracle import backends, check, check_layer

# (params, input shape (c, d, h, w)); num_output 0 given per case
GEOMETRY = [
    ({0: 4, 1: 1}, (3, 4, 5, 6)),
    ({0: 8, 1: 3, 4: 1}, (4, 6, 7, 5)),
    ({0: 5, 1: 3, 11: 2, 21: 1, 3: 2, 13: 1, 23: 2}, (3, 7, 6, 9)),  # per-axis kernel and stride
    (
        {0: 6, 1: 2, 2: 2, 12: 1, 22: 3, 4: 1, 14: 0, 24: 2, 17: 0, 15: 2, 16: 1},
        (2, 9, 8, 7),
    ),  # dilation, pads
    ({0: 4, 1: 3, 3: 2, 4: -233}, (3, 7, 8, 9)),  # SAME_UPPER
    ({0: 4, 1: 4, 3: 3, 4: -234}, (3, 8, 7, 10)),  # SAME_LOWER
    ({0: 4, 1: 3, 4: 1, 18: -0.5}, (2, 5, 5, 5)),  # pad_value
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
@pytest.mark.parametrize("backend", backends("Convolution3D"))
def test_convolution3d_geometry(geom, bias, backend):
    params, shape = geom
    check(backend, "Convolution3D", *conv_case("Convolution3D", params, shape, bias), tol=TOL)


# 16 -> 16 channels over 8x12x12: one fp32 and one fp16 set keep lavapipe's time down (the
# small cases above cover every option set)
@pytest.mark.parametrize("backend", backends("Convolution3D", grid=["fp32", "fp16sa-pack"]))
def test_convolution3d_large(backend):
    check(
        backend, "Convolution3D", *conv_case("Convolution3D", {0: 16, 1: 3, 4: 1}, (16, 8, 12, 12)), tol=TOL
    )


@pytest.mark.parametrize("act", sorted(ACTIVATIONS), ids=lambda a: f"act{a}")
@pytest.mark.parametrize("backend", backends("Convolution3D"))
def test_convolution3d_activation(act, backend):
    case = conv_case("Convolution3D", with_activation({0: 4, 1: 3, 4: 1}, act), (3, 5, 6, 7), scale=4.0)
    check(backend, "Convolution3D", *case, tol=TOL)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 2, 1: 3, 6: 55}, (2, 4, 4, 4), "weight_data_size"),
        ({0: 2, 1: 3, 6: 108, 23: 0}, (2, 4, 4, 4), "stride_d"),
        ({0: 2, 1: 3, 6: 108, 9: 9}, (2, 4, 4, 4), "activation_type"),
        ({0: 2, 1: 3, 6: 108}, (2, 4, 4), "4-D"),
        ({0: 2, 1: 3, 6: 108}, (3, 4, 4, 4), "input channels"),
        ({0: 2, 1: 5, 6: 500}, (2, 4, 4, 4), "smaller than the kernel"),
    ],
    ids=str,
)
def test_convolution3d_rejects(params, shape, key, caplog):
    check_rejected("Convolution3D", params, [([0.0] * params[6], 0)], shape, key, caplog)


def test_convolution3d_fp16_weights():
    # weights stored as fp16 (ModelBin's type-0 flag), read back as the rounded fp32 values
    params, weights, inputs = conv_case("Convolution3D", {0: 4, 1: 3, 4: 1}, (3, 5, 6, 7))
    check_layer("Convolution3D", params, [(weights[0][0], "fp16"), weights[1]], inputs, tol=TOL)
