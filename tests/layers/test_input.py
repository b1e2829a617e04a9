"""Input: its params, and a net of Input then a no-op layer hands the blob back unchanged on
the CPU and, on the GPU, in every storage form (Input_vulkan uploads it)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import GPU_GRID, check, default_option, make_param, randn, rng, run_layer, run_net_gpu

SHAPES = [(7,), (8,), (11,), (8, 5), (6, 9), (5, 7, 9), (8, 7, 9), (3, 5, 7), (4, 2, 3, 5), (2, 3, 5, 6)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_input_passes_through(shape):
    x = randn(rng("input", shape), shape)
    # a Dropout of scale 1 after the Input is a no-op in both, so the output is the input
    check("cpu", "Dropout", {}, [], [x], tol=0.0, paths=("net",))
    ret, outs = run_layer("Input", {0: 7, 1: 5, 11: 3, 2: 2}, [], [x])
    assert ret == 0 and np.array_equal(outs[0], x)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", list(GPU_GRID))
def test_input_through_relu_on_the_gpu(shape, name):
    """Input then ReLU(slope 1): exact in fp32, rounded to fp16 with fp16 storage or arithmetic."""
    x = randn(rng("input", shape), shape)
    ret, (out,) = run_net_gpu(make_param("ReLU", {0: 1.0}, [shape]), b"", [x], **GPU_GRID[name])
    assert ret == 0
    flags = GPU_GRID[name]
    rounded = x.astype(np.float16).astype(np.float32)
    if flags["use_fp16_storage"]:
        # fp16 blobs: every value is stored as a half
        np.testing.assert_array_equal(out, rounded)
    elif flags["use_fp16_arithmetic"]:
        # fp32 blobs with fp16 arithmetic: the value passes through a float16_t, and a driver may
        # keep that round trip in fp32 (the H200's does for some workgroup sizes: (7,), (8,) and
        # (4, 2, 3, 5) came back unrounded, the other shapes rounded; lavapipe always rounds).
        # Each element is therefore either the input or its fp16 rounding, nothing else.
        ok = (out == x) | (out == rounded)
        assert ok.all(), f"{(~ok).sum()} values are neither x nor x rounded to fp16"
    else:
        np.testing.assert_array_equal(out, x)


def test_input_params():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Input")
    pd = ParamDict()
    for k, v in {0: 7, 1: 5, 11: 3, 2: 2}.items():
        pd.set(k, v)
    assert layer.load_param(pd) == 0
    assert (layer.w, layer.h, layer.d, layer.c) == (7, 5, 3, 2)
    assert type(layer).__name__ == "Input" and layer.one_blob_only and layer.support_inplace


# the layer types of the SqueezeNet milestone, each with a GPU form
MILESTONE_TYPES = ["Input", "Convolution", "ReLU", "Pooling", "Concat", "Split", "Dropout", "Softmax"]


@pytest.mark.gpu
@pytest.mark.parametrize("layer_type", MILESTONE_TYPES)
def test_without_device_stays_cpu(layer_type):
    """A GPU layer class given no device creates no pipelines and still works on the CPU."""
    from ncnn_c.layer import create_layer_vulkan
    from ncnn_c.mat import Mat
    from ncnn_c.modelbin import ModelBinFromMatArray
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_vulkan(layer_type)
    assert layer is not None and layer.support_vulkan and layer.vkdev is None
    pd = ParamDict()
    for k, v in {"Convolution": {0: 2, 1: 1, 6: 6}, "Pooling": {1: 2}}.get(layer_type, {}).items():
        pd.set(k, v)
    assert layer.load_param(pd) == 0
    if layer_type == "Convolution":
        assert layer.load_model(ModelBinFromMatArray([Mat(randn(rng("no-device"), (6,)))])) == 0
    assert layer.create_pipeline(default_option()) == 0
    assert layer._pipelines == []
