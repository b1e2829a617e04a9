"""Deconvolution and DeconvolutionDepthWise on the GPU over the option grid: strides,
dilations, every crop form (pads, output_pad, output_w/output_h with SAME pads), groups,
bias on/off and the fused activations."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu

ACTS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.5], 4: None, 5: None, 6: [0.2, 0.5]}
EXTRAS = [
    (3, 3, {}),
    (4, 4, {3: 2, 4: 1}),
    (3, 2, {3: 2, 13: 3, 2: 2, 12: 1}),
    (3, 3, {3: 2, 18: 1, 4: 0, 15: 1}),
    (3, 3, {3: 2, 4: -233, 20: 12, 21: 14}),
    (3, 3, {3: 2, 4: -234, 20: 13}),
]


def _case(layer, inch, outch, group, kw, kh, shape_hw, extra, bias=True, act=0, grid=None):
    g = rng("deconv-gpu", layer, inch, outch, group, kw, kh, shape_hw, str(extra), bias, act)
    x = randn(g, (inch, *shape_hw))
    wt = randn(g, (outch * (inch // group) * kw * kh,), 0.5)
    params = {0: outch, 1: kw, 11: kh, 5: int(bias), 6: wt.size, **extra}
    if layer == "DeconvolutionDepthWise":
        params[7] = group
    if act:
        params[9] = act
        if ACTS[act]:
            params[10] = ACTS[act]
    weights = [wt] + ([(randn(g, (outch,)), 1)] if bias else [])
    return check_layer_gpu(layer, params, weights, [x], grid=grid)


@pytest.mark.parametrize("kw,kh,extra", EXTRAS, ids=str)
@pytest.mark.parametrize("inch,outch", [(3, 5), (8, 8), (4, 9)], ids=str)
def test_deconvolution_grid(inch, outch, kw, kh, extra):
    _case("Deconvolution", inch, outch, 1, kw, kh, (7, 6), extra)


# (inch, outch, group): depthwise (packed and not), with a multiplier, grouped, one group
GROUPINGS = [(8, 8, 8), (6, 6, 6), (4, 8, 4), (6, 12, 3), (8, 4, 2), (3, 5, 1)]


@pytest.mark.parametrize("kw,kh,extra", EXTRAS, ids=str)
@pytest.mark.parametrize("inch,outch,group", GROUPINGS, ids=str)
def test_deconvolutiondepthwise_grid(inch, outch, group, kw, kh, extra):
    _case(
        "DeconvolutionDepthWise",
        inch,
        outch,
        group,
        kw,
        kh,
        (7, 6),
        extra,
        grid=["fp32", "fp32-pack", "fp16s-pack"],
    )


@pytest.mark.parametrize("layer", ["Deconvolution", "DeconvolutionDepthWise"])
@pytest.mark.parametrize("act", range(1, 7))
def test_deconvolution_activation_grid(layer, act):
    _case(layer, 4, 4, 4 if layer == "DeconvolutionDepthWise" else 1, 3, 3, (5, 6), {3: 2}, act=act)


@pytest.mark.parametrize("layer", ["Deconvolution", "DeconvolutionDepthWise"])
@pytest.mark.parametrize("shape_hw", [(1, 1), (7, 13), (57, 61)], ids=str)
def test_deconvolution_sizes_no_bias(layer, shape_hw):
    group = 4 if layer == "DeconvolutionDepthWise" else 1
    _case(
        layer,
        4,
        4,
        group,
        4,
        4,
        shape_hw,
        {3: 2, 4: 1},
        bias=False,
        act=1,
        grid=["fp32", "fp16s-pack", "fp16pa-pack"],
    )
