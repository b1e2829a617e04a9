"""DeconvolutionDepthWise against the PyPI ncnn oracle: depthwise and grouped forms.

The geometry list and case builder are shared with test_deconvolutiondepthwise_vulkan.py."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer
from test_deconvolution import ACTIVATIONS, with_activation


def deconvdw_case(inch, outch, group, kw, kh, h, w, extra, bias=True, fp16=False, key=()):
    g = rng("deconvdw", inch, outch, group, kw, kh, h, w, sorted(extra.items(), key=str), bias, fp16, key)
    x = randn(g, (inch, h, w))
    wt = randn(g, (outch * (inch // group) * kw * kh,), 0.5)
    params = {0: outch, 1: kw, 11: kh, 5: int(bias), 6: wt.size, 7: group, **extra}
    weights = [(wt, "fp16" if fp16 else 0)]
    if bias:
        weights.append((randn(g, (outch,)), 1))
    return params, weights, [x]


# (kw, kh, extra): strides, dilations, every crop form (pads, output_pad, output_w/output_h
# with SAME pads); the GPU tests of both deconvolutions run them too
EXTRAS = [
    (3, 3, {}),
    (4, 4, {3: 2, 4: 1}),
    (3, 2, {3: 2, 13: 3, 2: 2, 12: 1}),
    (3, 3, {3: 2, 18: 1, 4: 0, 15: 1}),
    (3, 3, {3: 2, 4: -233, 20: 12, 21: 14}),
    (3, 3, {3: 2, 4: -234, 20: 13}),
]
# (inch, outch, group): depthwise, depthwise with a multiplier, grouped, grouped shrinking, one group
GROUPINGS = [(6, 6, 6), (4, 8, 4), (6, 12, 3), (8, 4, 2), (3, 5, 1), (1, 1, 1)]


@pytest.mark.parametrize("inch,outch,group", GROUPINGS)
@pytest.mark.parametrize("kw,kh,extra", EXTRAS)
def test_groups(inch, outch, group, kw, kh, extra):
    for bias in (True, False):
        params, weights, inputs = deconvdw_case(inch, outch, group, kw, kh, 7, 6, extra, bias)
        check_layer("DeconvolutionDepthWise", params, weights, inputs)


@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
def test_activation(act, act_params):
    extra = with_activation({3: 2}, act)
    for inch, outch, group in ((4, 4, 4), (4, 6, 2)):
        params, weights, inputs = deconvdw_case(inch, outch, group, 3, 3, 5, 6, extra, key=act)
        check_layer("DeconvolutionDepthWise", params, weights, inputs)


def test_sizes():
    for h, w in ((1, 1), (7, 13), (227, 227)):
        params, weights, inputs = deconvdw_case(3, 3, 3, 4, 4, h, w, {3: 2, 4: 1, 9: 1})
        check_layer("DeconvolutionDepthWise", params, weights, inputs)


def test_fp16_weights():
    params, weights, inputs = deconvdw_case(6, 6, 3, 3, 3, 7, 9, {3: 2}, fp16=True)
    check_layer("DeconvolutionDepthWise", params, weights, inputs)


@pytest.mark.parametrize("inch,outch,group", [(6, 6, 6), (6, 4, 2)])
def test_dynamic_weight(inch, outch, group):
    g = rng("deconvdw dynamic", inch, outch, group)
    x = randn(g, (inch, 5, 6))
    wd = randn(g, (inch, outch // group, 3, 2))  # [inch][outch/group][kh][kw]
    params = {0: outch, 1: 2, 11: 3, 3: 2, 5: 1, 7: group, 28: 1}
    check_layer("DeconvolutionDepthWise", params, [], [x, wd, randn(g, (outch,))])


def _rejects(caplog, params, weights, inputs, words):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("DeconvolutionDepthWise", params, weights, inputs)
    assert ret != 0
    assert any(words in r.getMessage() for r in caplog.records), caplog.text


def test_bad_inputs(caplog):
    params, weights, inputs = deconvdw_case(6, 6, 3, 3, 3, 5, 5, {3: 2})
    _rejects(caplog, params, weights, [inputs[0][0]], "3-D")
    _rejects(caplog, params, weights, [inputs[0][:4]], "input channels")
    _rejects(caplog, {**params, 7: 4}, weights, inputs, "groups")
    _rejects(caplog, {**params, 6: params[6] + 3}, weights, inputs, "weight_data_size")
    dyn = {0: 8, 1: 3, 3: 2, 7: 4, 28: 1}
    _rejects(caplog, dyn, [], [inputs[0], np.zeros((6, 2, 3, 3), np.float32)], "groups")
