"""InnerProduct against the PyPI ncnn oracle: every input rank flattened, the batched 2-D form,
every activation, fp16-stored weights, a big head, each case on every backend (oracle.backends:
the CPU, and the GPU option grid); then the CPU's numpy definition, the GPU's split-K form, and
bad inputs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    SHAPES_ALL,
    backends,
    check,
    check_layer_gpu,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_net_gpu,
)

ACTIVATIONS = [(0, None), (1, None), (2, [0.1]), (3, [-0.5, 0.5]), (4, None), (5, None), (6, [0.2, 0.5])]


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


def gpu_only(*values):
    """A case only the GPU's list had, there for its packing (8 or 12 outputs or rows, 8 or 12
    channels): in the slow run only, with the packed GPU sets (the main run's GPU set, fp32,
    does not pack). In the main run they made this module's main run longer than the two it
    merges (30 s against 26 s, two shared cores at load ~9)."""
    return pytest.param(*values, marks=pytest.mark.slow)


# (shape, num_output, bias): a 2-D input flattens too (its weights are of the full rows x
# columns size)
FLATTEN = [(s, 7, bias) for s in SHAPES_ALL for bias in (True, False)]
FLATTEN += [gpu_only(s, 8, True) for s in SHAPES_ALL]
FLATTEN += [gpu_only(s, n, n == 8) for s in [(8, 5, 7), (8, 6), (4, 2, 3, 5), (12,)] for n in (7, 8)]


@pytest.mark.parametrize("shape,num_output,bias", FLATTEN, ids=str)
@pytest.mark.parametrize("backend", backends("InnerProduct"))
def test_flatten(shape, num_output, bias, backend):
    check(backend, "InnerProduct", *case(shape, num_output, bias))


BATCHED = [(r, n, out) for r, n in [(1, 5), (7, 13), (16, 32), (3, 1)] for out in (1, 10)]
BATCHED += [gpu_only(r, n, 12) for r, n in [(1, 5), (7, 13), (16, 32), (3, 1)]]
BATCHED += [gpu_only(8, 6, out) for out in (1, 10, 12)]


@pytest.mark.parametrize("rows,num_input,num_output", BATCHED, ids=str)
@pytest.mark.parametrize("backend", backends("InnerProduct"))
def test_batched_rows(rows, num_input, num_output, backend):
    params, weights, inputs = case((rows, num_input), num_output, num_input=num_input)
    if backend == "cpu":
        ret, out = run_layer("InnerProduct", params, weights, inputs)
        assert ret == 0 and out[0].shape == ((rows, num_output) if rows > 1 else (1, num_output))
    check(backend, "InnerProduct", params, weights, inputs)


@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
@pytest.mark.parametrize(
    "shape,num_input", [((3, 4, 5), None), ((6, 20), 20), gpu_only((8, 20), 20)], ids=str
)
@pytest.mark.parametrize("backend", backends("InnerProduct"))
def test_activation(act, act_params, shape, num_input, backend):
    # after a flattened input and after a batch of rows (8 rows: packed with packing on)
    extra = {9: act, **({10: act_params} if act_params is not None else {})}
    check(backend, "InnerProduct", *case(shape, 16, extra=extra, num_input=num_input, key=act))


@pytest.mark.parametrize("backend", backends("InnerProduct"))
def test_fp16_weights(backend):
    params, weights, inputs = case((8, 6, 6), 12, fp16=True)
    check(backend, "InnerProduct", params, weights, inputs)


@pytest.mark.parametrize("backend", backends("InnerProduct"))
def test_large(backend):
    # a VGG-like classifier head, smaller: 512*7*7 inputs
    params, weights, inputs = case((512, 7, 7), 256)
    check(backend, "InnerProduct", params, weights, inputs)


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


@pytest.mark.gpu
def test_wrong_input_size_fails(caplog):
    params, weights, _ = case((3, 4, 5), 8)
    x = np.ones((3, 4, 6), np.float32)
    param = make_param("InnerProduct", params, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, make_bin(weights), [x], 1, **GPU_GRID["fp32-pack"])
    assert ret != 0
    assert "weights expect" in caplog.text


# -- the split-K form (GPUs; forced here on lavapipe) -----------------------------------------
@pytest.fixture
def splitk(monkeypatch):
    """Every InnerProduct of the test takes innerproduct_splitk.comp for its 1-row form, and
    the test fails unless it really ran."""
    from ncnn_c.layer.vulkan import innerproduct_vulkan

    monkeypatch.setenv("NCNN_C_IP_SPLITK", "always")
    ran = []
    real = innerproduct_vulkan.InnerProduct_vulkan.forward_vk

    def spy(self, bottom, top, cmd, opt):
        ran.append(self.pipeline_innerproduct_splitk is not None)
        return real(self, bottom, top, cmd, opt)

    monkeypatch.setattr(innerproduct_vulkan.InnerProduct_vulkan, "forward_vk", spy)
    yield ran
    assert ran and all(ran), "the split-K pipeline did not run"


# lengths around the 4-values-per-step loop and the 32 K lanes; outputs around the 8-vec4 group
@pytest.mark.gpu
@pytest.mark.parametrize(
    "shape,num_output",
    [((1,), 1), ((31,), 3), ((33,), 33), ((128,), 8), ((4, 13, 17), 64), ((9, 6), 5), ((8, 3, 2, 5), 12)],
    ids=str,
)
def test_splitk(splitk, shape, num_output):
    params, weights, inputs = case(shape, num_output, num_output % 2 == 1, key="splitk")
    check_layer_gpu(
        "InnerProduct", params, weights, inputs, grid=["fp32", "fp32-pack", "fp16s-pack", "fp16sa"]
    )


@pytest.mark.gpu
@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
def test_splitk_activation(splitk, act, act_params):
    extra = {9: act, **({10: act_params} if act_params else {})}
    params, weights, inputs = case((16, 5, 5), 36, extra=extra, key="splitk-act")
    check_layer_gpu("InnerProduct", params, weights, inputs, grid=["fp32-pack", "fp16sa"])


@pytest.mark.gpu
def test_splitk_long_input_and_fp16_weights(splitk):
    params, weights, inputs = case((512, 7, 7), 100, key="splitk-long")
    check_layer_gpu("InnerProduct", params, weights, inputs, grid=["fp32-pack", "fp16s-pack"])
    params, weights, inputs = case((64, 3, 3), 40, fp16=True, key="splitk-fp16")
    check_layer_gpu("InnerProduct", params, weights, inputs, grid=["fp32", "fp16sa-pack"])


@pytest.mark.gpu
def test_splitk_policy_is_checked(monkeypatch, caplog):
    params, weights, inputs = case((8,), 4)
    param = make_param("InnerProduct", params, [inputs[0].shape], 1)
    monkeypatch.setenv("NCNN_C_IP_SPLITK", "sometimes")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, make_bin(weights), inputs, 1, **GPU_GRID["fp32"])
    assert ret != 0
    assert "NCNN_C_IP_SPLITK" in caplog.text
