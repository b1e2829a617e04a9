"""InnerProduct against the PyPI ncnn oracle: every input rank, the batched 2-D form, activations.

The case builders are shared with test_innerproduct_vulkan.py."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer

# -- the cases, shared with test_innerproduct_vulkan.py ------------------------------------------

ACTIVATIONS = [(0, None), (1, None), (2, [0.1]), (3, [-0.5, 0.5]), (4, None), (5, None), (6, [0.2, 0.5])]
# (rows, num_input) of the batched 2-D form, and its num_output values
BATCHED_ROWS = [(1, 5), (7, 13), (16, 32), (3, 1)]
BATCHED_OUTPUTS = [1, 10]


def case(shape, num_output, bias=True, extra=None, fp16=False, num_input=None, key=()):
    """(params, weights, inputs) of one InnerProduct over an input of ``shape``: a 2-D input
    of rows of ``num_input`` values is a batch; without ``num_input`` everything flattens."""
    g = rng("innerproduct", shape, num_output, bias, sorted((extra or {}).items(), key=str), fp16, key)
    x = randn(g, shape)
    num_input = num_input or int(np.prod(shape))
    w = randn(g, (num_output * num_input,), 1.0 / np.sqrt(num_input))
    params = {0: num_output, 1: int(bias), 2: w.size, **(extra or {})}
    weights = [(w, "fp16" if fp16 else 0)]
    if bias:
        weights.append((randn(g, (num_output,)), 1))
    return params, weights, [x]


def activation_cases(act, act_params, rows=6):
    """Activation ``act`` after a flattened (3, 4, 5) input and after a batch of ``rows`` rows."""
    extra = {9: act, **({10: act_params} if act_params is not None else {})}
    return [
        case(shape, 16, extra=extra, num_input=n, key=act)
        for shape, n in (((3, 4, 5), None), ((rows, 20), 20))
    ]


# -- the CPU tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES_ALL)
@pytest.mark.parametrize("bias", [True, False])
def test_flatten(shape, bias):
    # (a 2-D input flattens too: its weights are of the full rows x columns size)
    check_layer("InnerProduct", *case(shape, 7, bias))


@pytest.mark.parametrize("rows,num_input", BATCHED_ROWS)
@pytest.mark.parametrize("num_output", BATCHED_OUTPUTS)
def test_batched_rows(rows, num_input, num_output):
    params, weights, inputs = case((rows, num_input), num_output, num_input=num_input)
    ret, out = run_layer("InnerProduct", params, weights, inputs)
    assert ret == 0 and out[0].shape == ((rows, num_output) if rows > 1 else (1, num_output))
    check_layer("InnerProduct", params, weights, inputs)


@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
def test_activation(act, act_params):
    for params, weights, inputs in activation_cases(act, act_params):
        check_layer("InnerProduct", params, weights, inputs)


def test_fp16_weights():
    params, weights, inputs = case((8, 6, 6), 12, fp16=True)
    check_layer("InnerProduct", params, weights, inputs)


def test_large():
    # a VGG-like classifier head, smaller: 512*7*7 inputs
    params, weights, inputs = case((512, 7, 7), 256)
    check_layer("InnerProduct", params, weights, inputs)


def test_matches_numpy_definition():
    params, weights, inputs = case((2, 3, 4), 5)
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
    params, weights, inputs = case((3, 4, 5), 6)
    _rejects(caplog, params, weights, [inputs[0][:2]], "weights expect")
    _rejects(caplog, params, weights, [np.zeros((7, 13), np.float32)], "weights expect")
    _rejects(caplog, {**params, 2: params[2] - 1}, weights, inputs, "multiple of num_output")
    _rejects(caplog, {**params, 8: 1}, weights, inputs, "int8")
    _rejects(caplog, {**params, 9: 9}, weights, inputs, "activation_type")
    _rejects(caplog, {**params, 9: 6, 10: [0.2]}, weights, inputs, "param 10")
