"""DeformableConv2D against the PyPI ncnn oracle: ncnn's test_deformableconv2d forms (kernel,
dilation, stride per axis, pads, with and without the mask, bias, every fused activation),
offsets large enough to reach past the input, each on every backend (oracle.backends: the
CPU and the GPU option grid); bad params and inputs, on the CPU and the GPU."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _window_nd_cases import ACTIVATIONS, TOL, with_activation
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

from ncnn_c.layer._geometry import kernel_extent, output_shape

GEOMETRY = [
    ({0: 4, 1: 1}, (3, 5, 6)),
    ({0: 4, 1: 3, 4: 1}, (3, 7, 8)),
    ({0: 5, 1: 3, 11: 2, 3: 2, 13: 1, 2: 2, 4: 1, 14: 0, 15: 2}, (3, 9, 8)),
    ({0: 6, 1: 2, 12: 2, 4: 1, 16: 0}, (4, 6, 7)),
]


def deform_case(params, shape, mask=True, bias=True, scale=1.0):
    g = rng("deformableconv2d", sorted(params.items()), shape, mask, bias)
    kw = params[1]
    kh = params.get(11, kw)
    dw = params.get(2, 1)
    dh = params.get(12, dw)
    sw = params.get(3, 1)
    sh = params.get(13, sw)
    left = params.get(4, 0)
    top = params.get(14, left)
    pads = (top, params.get(16, top), left, params.get(15, left))
    out = output_shape(shape[1:], (kernel_extent(kh, dh), kernel_extent(kw, dw)), (sh, sw), pads)
    weight = randn(g, (params[0] * shape[0] * kh * kw,), 1.0 / np.sqrt(shape[0] * kh * kw))
    weights = [(weight, 0)] + ([(randn(g, (params[0],)), 1)] if bias else [])
    inputs = [randn(g, shape, scale), randn(g, (2 * kh * kw, *out), 2.0)]
    if mask:
        inputs.append(g.uniform(0, 1, (kh * kw, *out)).astype(np.float32))
    return {**params, 5: int(bias), 6: weight.size}, weights, inputs


@pytest.mark.parametrize("mask", [True, False], ids=["mask", "nomask"])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]))
@pytest.mark.parametrize("backend", backends("DeformableConv2D"))
def test_deformableconv2d_geometry(geom, mask, backend):
    params, shape = geom
    check(backend, "DeformableConv2D", *deform_case(params, shape, mask), tol=TOL)


# 16 -> 16 channels over 16x16: one fp32 and one fp16 set keep lavapipe's time down (the
# small cases above cover every option set)
@pytest.mark.parametrize("mask", [True, False], ids=["mask", "nomask"])
@pytest.mark.parametrize("backend", backends("DeformableConv2D", grid=["fp32", "fp16sa-pack"]))
def test_deformableconv2d_large(mask, backend):
    check(backend, "DeformableConv2D", *deform_case({0: 16, 1: 3, 4: 1}, (16, 16, 16), mask), tol=TOL)


@pytest.mark.parametrize("backend", backends("DeformableConv2D"))
def test_deformableconv2d_nobias(backend):
    check(backend, "DeformableConv2D", *deform_case({0: 4, 1: 3, 4: 1}, (3, 7, 8), bias=False), tol=TOL)


@pytest.mark.parametrize("act", sorted(ACTIVATIONS), ids=lambda a: f"act{a}")
@pytest.mark.parametrize("backend", backends("DeformableConv2D"))
def test_deformableconv2d_activation(act, backend):
    case = deform_case(with_activation({0: 4, 1: 3, 4: 1}, act), (3, 7, 8), scale=4.0)
    check(backend, "DeformableConv2D", *case, tol=TOL)


@pytest.mark.parametrize(
    "params,shapes,key",
    [
        ({0: 2, 1: 3, 6: 37}, [(2, 4, 4), (18, 2, 2)], "weight_data_size"),
        ({0: 2, 1: 3, 6: 36, 3: 0}, [(2, 4, 4), (18, 2, 2)], "stride_w"),
        ({0: 2, 1: 3, 6: 36, 4: -233}, [(2, 4, 4), (18, 2, 2)], "pad"),
        ({0: 2, 1: 3, 6: 36, 9: 7}, [(2, 4, 4), (18, 2, 2)], "activation_type"),
        ({0: 2, 1: 3, 6: 36}, [(2, 4, 4), (16, 2, 2)], "offset"),
        ({0: 2, 1: 3, 6: 36}, [(2, 4, 4), (18, 2, 2), (9, 3, 2)], "mask"),
        ({0: 2, 1: 3, 6: 36}, [(3, 4, 4), (18, 2, 2)], "input channels"),
    ],
    ids=str,
)
def test_deformableconv2d_rejects(params, shapes, key, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "DeformableConv2D",
            params,
            [(np.zeros(params[6], np.float32), 0)],
            [np.zeros(s, np.float32) for s in shapes],
        )
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "DeformableConv2D" in lines[0] and key in lines[0], lines


@pytest.mark.gpu
@pytest.mark.parametrize("offset_shape", [(16, 5, 6), (18, 5, 5)], ids=str)
def test_deformableconv2d_gpu_rejects_offsets(offset_shape, caplog):
    # offsets that do not fit the taps or the output: the GPU forward refuses them, logged
    params, weights, inputs = deform_case({0: 4, 1: 3, 4: 1}, (3, 5, 6), mask=False)
    inputs[1] = np.zeros(offset_shape, np.float32)
    text = make_param("DeformableConv2D", params, [x.shape for x in inputs], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin(weights), inputs)
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("DeformableConv2D" in line and "offset" in line for line in lines), lines
