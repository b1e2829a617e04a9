"""InnerProduct on the GPU over the option grid: every input rank and packing flattened, the
batched 2-D form (rows packed and not), every activation, fp16-stored weights, a big head;
the cases are test_innerproduct.py's, with more packed sizes."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import GPU_GRID, SHAPES_ALL, check_layer_gpu, make_bin, make_param, run_net_gpu
from test_innerproduct import ACTIVATIONS, BATCHED_OUTPUTS, BATCHED_ROWS, activation_cases, case

pytestmark = pytest.mark.gpu

# the sweeps run two option sets by default and the whole grid in the slow run
GRIDS = [
    pytest.param(["fp32-pack", "fp16s"], id="fast"),
    pytest.param(None, id="full", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (8, 6), (4, 2, 3, 5), (12,)], ids=str)
@pytest.mark.parametrize("num_output", [7, 8])
def test_flatten(shape, num_output, grid):
    check_layer_gpu("InnerProduct", *case(shape, num_output, num_output == 8), grid=grid)


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("rows,num_input", BATCHED_ROWS + [(8, 6)])
@pytest.mark.parametrize("num_output", BATCHED_OUTPUTS + [12])
def test_batched_rows(rows, num_input, num_output, grid):
    params, weights, inputs = case((rows, num_input), num_output, num_input=num_input)
    check_layer_gpu("InnerProduct", params, weights, inputs, grid=grid)


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
def test_activation(act, act_params, grid):
    # a batch of 8 rows: packed with packing on
    for params, weights, inputs in activation_cases(act, act_params, rows=8):
        check_layer_gpu("InnerProduct", params, weights, inputs, grid=grid)


def test_fp16_weights():
    params, weights, inputs = case((8, 6, 6), 12, fp16=True)
    check_layer_gpu("InnerProduct", params, weights, inputs)


def test_large():
    params, weights, inputs = case((512, 7, 7), 256)
    check_layer_gpu("InnerProduct", params, weights, inputs, grid=["fp32-pack", "fp16s-pack", "fp16sa"])


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


@pytest.mark.parametrize("act,act_params", ACTIVATIONS)
def test_splitk_activation(splitk, act, act_params):
    extra = {9: act, **({10: act_params} if act_params else {})}
    params, weights, inputs = case((16, 5, 5), 36, extra=extra, key="splitk-act")
    check_layer_gpu("InnerProduct", params, weights, inputs, grid=["fp32-pack", "fp16sa"])


def test_splitk_long_input_and_fp16_weights(splitk):
    params, weights, inputs = case((512, 7, 7), 100, key="splitk-long")
    check_layer_gpu("InnerProduct", params, weights, inputs, grid=["fp32-pack", "fp16s-pack"])
    params, weights, inputs = case((64, 3, 3), 40, fp16=True, key="splitk-fp16")
    check_layer_gpu("InnerProduct", params, weights, inputs, grid=["fp32", "fp16sa-pack"])


def test_splitk_policy_is_checked(monkeypatch, caplog):
    params, weights, inputs = case((8,), 4)
    param = make_param("InnerProduct", params, [inputs[0].shape], 1)
    monkeypatch.setenv("NCNN_C_IP_SPLITK", "sometimes")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, make_bin(weights), inputs, 1, **GPU_GRID["fp32"])
    assert ret != 0
    assert "NCNN_C_IP_SPLITK" in caplog.text
