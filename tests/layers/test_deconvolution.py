"""Deconvolution against the PyPI ncnn oracle: geometry, pads, output size, activations, dynamic weights.

The case builder is shared with test_deconvolution_vulkan.py."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

ACTIVATIONS = [(0, None), (1, None), (2, [0.1]), (3, [-0.5, 0.5]), (4, None), (5, None), (6, [0.2, 0.5])]


def deconv_case(inch, outch, kw, kh, h, w, extra, bias=True, fp16=False, key=()):
    g = rng("deconv", inch, outch, kw, kh, h, w, sorted(extra.items(), key=str), bias, fp16, key)
    x = randn(g, (inch, h, w))
    wt = randn(g, (outch * inch * kw * kh,), 0.5)
    params = {0: outch, 1: kw, 11: kh, 5: int(bias), 6: wt.size, **extra}
    weights = [(wt, "fp16" if fp16 else 0)]
    if bias:
        weights.append((randn(g, (outch,)), 1))
    return params, weights, [x]


def with_activation(extra, act):
    """``extra`` with activation ``act`` and its ACTIVATIONS parameters."""
    values = dict(ACTIVATIONS)[act]
    return {**extra, 9: act, **({10: values} if values is not None else {})}


@pytest.mark.parametrize(
    "kw,kh,extra",
    [
        (1, 1, {}),
        (3, 3, {}),
        (3, 3, {3: 2}),
        (4, 4, {3: 2, 4: 1}),
        (2, 2, {3: 2}),
        (3, 2, {3: 2, 13: 3, 2: 2, 12: 3}),
        (3, 3, {3: 2, 4: 1, 15: 0, 14: 2, 16: 1}),
        (3, 3, {3: 2, 18: 1}),
        (3, 3, {3: 3, 18: 2, 19: 1}),
        (5, 3, {3: 1, 4: 2, 14: 1}),
    ],
)
def test_geometry(kw, kh, extra):
    for bias in (True, False):
        params, weights, inputs = deconv_case(5, 4, kw, kh, 7, 13, extra, bias)
        errs = check_layer("Deconvolution", params, weights, inputs)
        assert max(errs.values()) <= 1e-5


@pytest.mark.parametrize(
    "pad,out_w,out_h",
    [(-233, 14, 14), (-233, 15, 12), (-234, 14, 14), (-234, 15, 12), (-233, 27, 15), (-234, 20, 9)],
)
def test_same_output_size(pad, out_w, out_h):
    params, weights, inputs = deconv_case(3, 2, 3, 3, 7, 13, {3: 2, 4: pad, 20: out_w, 21: out_h})
    check_layer("Deconvolution", params, weights, inputs)
    # output_h defaults to output_w
    params, weights, inputs = deconv_case(3, 2, 3, 3, 13, 13, {3: 2, 4: pad, 20: out_w})
    check_layer("Deconvolution", params, weights, inputs)


def test_same_pads_without_output_size_keep_full():
    params, weights, inputs = deconv_case(3, 2, 3, 3, 5, 6, {3: 2, 4: -233})
    ret, out = run_layer("Deconvolution", params, weights, inputs)
    assert ret == 0 and out[0].shape == (2, 11, 13)
    check_layer("Deconvolution", params, weights, inputs)


@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
def test_activation(act, act_params):
    params, weights, inputs = deconv_case(4, 3, 3, 3, 6, 5, with_activation({3: 2}, act), key=act)
    check_layer("Deconvolution", params, weights, inputs)


@pytest.mark.parametrize("inch,outch,h,w", [(1, 1, 1, 1), (1, 3, 1, 1), (7, 1, 7, 13), (16, 8, 8, 8)])
def test_sizes(inch, outch, h, w):
    params, weights, inputs = deconv_case(inch, outch, 3, 3, h, w, {3: 2, 4: 1})
    check_layer("Deconvolution", params, weights, inputs)


def test_large_image():
    params, weights, inputs = deconv_case(3, 2, 4, 4, 227, 227, {3: 2, 4: 1, 9: 1})
    check_layer("Deconvolution", params, weights, inputs)


def test_fp16_weights():
    params, weights, inputs = deconv_case(6, 5, 3, 3, 7, 9, {3: 2}, fp16=True)
    check_layer("Deconvolution", params, weights, inputs)


@pytest.mark.parametrize("bias", [True, False])
def test_dynamic_weight(bias):
    g = rng("deconv dynamic", bias)
    x = randn(g, (4, 5, 6))
    wd = randn(g, (4, 3, 3, 2))  # [inch][outch][kh][kw]
    inputs = [x, wd] + ([randn(g, (3,))] if bias else [])
    params = {0: 3, 1: 2, 11: 3, 3: 2, 4: 1, 5: int(bias), 28: 1, 9: 3, 10: [-1.0, 1.0]}
    check_layer("Deconvolution", params, [], inputs)


def test_matches_numpy_definition():
    # an independent per-pixel scatter, to check more than agreement with the oracle
    params, weights, inputs = deconv_case(2, 3, 3, 2, 3, 4, {3: 2, 13: 1, 2: 2}, key="np")
    x = inputs[0]
    wt = np.asarray(weights[0][0]).reshape(3, 2, 2, 3)
    bias = np.asarray(weights[1][0])
    ref = np.zeros((3, (3 - 1) * 1 + 2 * 1 + 1, (4 - 1) * 2 + 2 * 2 + 1), np.float64) + bias[:, None, None]
    for i in range(3):
        for j in range(4):
            for ky in range(2):
                for kx in range(3):
                    ref[:, i + ky * 2, j * 2 + kx * 2] += wt[:, :, ky, kx] @ x[:, i, j]
    ret, out = run_layer("Deconvolution", params, weights, inputs)
    assert ret == 0
    np.testing.assert_allclose(out[0], ref, rtol=1e-5, atol=1e-5)


def _rejects(caplog, params, weights, inputs, words):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Deconvolution", params, weights, inputs)
    assert ret != 0
    assert any(words in r.getMessage() for r in caplog.records), caplog.text


def test_bad_inputs(caplog):
    params, weights, inputs = deconv_case(3, 2, 3, 3, 5, 5, {3: 2})
    _rejects(caplog, params, weights, [inputs[0][0]], "3-D")
    _rejects(caplog, params, weights, [inputs[0][:2]], "input channels")
    _rejects(caplog, {**params, 6: params[6] + 1}, weights, inputs, "weight_data_size")
    _rejects(caplog, {**params, 9: 7}, weights, inputs, "activation_type")
    _rejects(caplog, {**params, 9: 3}, weights, inputs, "param 10")
    _rejects(caplog, {**params, 20: 8}, weights, inputs, "SAME")
    _rejects(caplog, {**params, 4: -233, 20: 40}, weights, inputs, "larger")
    _rejects(caplog, {**params, 4: 6}, weights, inputs, "leave nothing")
    _rejects(caplog, {**params, 4: -5}, weights, inputs, "pads")
    _rejects(caplog, {**params, 3: 0}, weights, inputs, "stride")
    # dynamic weights: the weight blob must be 4-D and split into the input channels
    dyn = {0: 2, 1: 3, 3: 2, 28: 1}
    _rejects(caplog, dyn, [], [inputs[0]], "inputs")
    _rejects(caplog, dyn, [], [inputs[0], np.zeros((3, 2, 9), np.float32)], "4-D")
    _rejects(caplog, dyn, [], [inputs[0], np.zeros((2, 2, 3, 3), np.float32)], "input channels")
