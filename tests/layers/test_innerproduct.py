"""InnerProduct against the PyPI ncnn oracle: every input rank, the batched 2-D form, activations."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer

ACTIVATIONS = [(0, None), (1, None), (2, [0.1]), (3, [-0.5, 0.5]), (4, None), (5, None), (6, [0.2, 0.5])]


def _case(shape, num_output, bias=True, extra=None, fp16=False, num_input=None, key=()):
    g = rng("innerproduct", shape, num_output, bias, sorted((extra or {}).items(), key=str), fp16, key)
    x = randn(g, shape)
    num_input = num_input or int(np.prod(shape))
    w = randn(g, (num_output * num_input,), 1.0 / np.sqrt(num_input))
    params = {0: num_output, 1: int(bias), 2: w.size, **(extra or {})}
    weights = [(w, "fp16" if fp16 else 0)]
    if bias:
        weights.append((randn(g, (num_output,)), 1))
    return params, weights, [x]


@pytest.mark.parametrize("shape", SHAPES_ALL)
@pytest.mark.parametrize("bias", [True, False])
def test_flatten(shape, bias):
    num_input = int(np.prod(shape))
    if len(shape) == 2:
        # rows of num_input values would be a batch: weights of the full size flatten instead
        num_input = shape[0] * shape[1]
    params, weights, inputs = _case(shape, 7, bias, num_input=num_input)
    check_layer("InnerProduct", params, weights, inputs)


@pytest.mark.parametrize("rows,num_input", [(1, 5), (7, 13), (16, 32), (3, 1)])
@pytest.mark.parametrize("num_output", [1, 10])
def test_batched_rows(rows, num_input, num_output):
    params, weights, inputs = _case((rows, num_input), num_output, num_input=num_input)
    ret, out = run_layer("InnerProduct", params, weights, inputs)
    assert ret == 0 and out[0].shape == ((rows, num_output) if rows > 1 else (1, num_output))
    check_layer("InnerProduct", params, weights, inputs)


@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
def test_activation(act, act_params):
    extra = {9: act}
    if act_params is not None:
        extra[10] = act_params
    for shape, num_input in (((3, 4, 5), None), ((6, 20), 20)):
        params, weights, inputs = _case(shape, 16, extra=extra, num_input=num_input, key=act)
        check_layer("InnerProduct", params, weights, inputs)


def test_fp16_weights():
    params, weights, inputs = _case((8, 6, 6), 12, fp16=True)
    check_layer("InnerProduct", params, weights, inputs)


def test_large():
    # a VGG-like classifier head, smaller: 512*7*7 inputs
    params, weights, inputs = _case((512, 7, 7), 256)
    check_layer("InnerProduct", params, weights, inputs)


def test_matches_numpy_definition():
    params, weights, inputs = _case((2, 3, 4), 5)
    ret, out = run_layer("InnerProduct", params, weights, inputs)
    assert ret == 0
    w = np.asarray(weights[0][0], np.float64).reshape(5, 24)
    ref = w @ inputs[0].reshape(24) + weights[1][0]
    np.testing.assert_allclose(out[0], ref, rtol=1e-5, atol=1e-5)


def _rejects(caplog, params, weights, inputs, words):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("InnerProduct", params, weights, inputs)
    assert ret != 0
    assert any(words in r.getMessage() for r in caplog.records), caplog.text


def test_bad_inputs(caplog):
    params, weights, inputs = _case((3, 4, 5), 6)
    _rejects(caplog, params, weights, [inputs[0][:2]], "weights expect")
    _rejects(caplog, params, weights, [np.zeros((7, 13), np.float32)], "weights expect")
    _rejects(caplog, {**params, 2: params[2] - 1}, weights, inputs, "multiple of num_output")
    _rejects(caplog, {**params, 8: 1}, weights, inputs, "int8")
    _rejects(caplog, {**params, 9: 9}, weights, inputs, "activation_type")
    _rejects(caplog, {**params, 9: 6, 10: [0.2]}, weights, inputs, "param 10")
