"""``ncnn_c.tools.bandwidth``: the memory rates ``bench --llm`` divides a decode step's bytes
by, and the weight bytes it counts."""

from __future__ import annotations

import numpy as np
import pytest

import ncnn_c
from ncnn_c.tools import bandwidth


def test_cpu_read_bandwidth_is_a_rate():
    one = bandwidth.cpu_read_bandwidth(1, nbytes=32 << 20, repeats=3)
    two = bandwidth.cpu_read_bandwidth(2, nbytes=32 << 20, repeats=3)
    # a memory system reads somewhere between 100 MB/s and 10 TB/s
    assert 1e8 < one < 1e13 and 1e8 < two < 1e13


@pytest.mark.gpu
def test_vulkan_copy_bandwidth_is_a_rate():
    assert ncnn_c.get_gpu_count() > 0, "no Vulkan device (lavapipe is installed by ./run.sh)"
    vkdev = ncnn_c.get_gpu_device(0)
    rate = bandwidth.vulkan_copy_bandwidth(vkdev, nbytes=8 << 20, copies=4, repeats=2)
    assert rate is not None and 1e8 < rate < 1e14


def test_weight_bytes_counts_every_weight_array():
    # InnerProduct 8 outputs from 4 inputs with a bias: 32 + 8 floats; Convolution 2 -> 3
    # channels 3x3 without bias: 54 floats
    text = (
        "7767517\n3 3\nInput in0 0 1 in0 0=4\n"
        "InnerProduct fc 1 1 in0 out0 0=8 1=1 2=32\n"
        "Convolution conv 1 1 out0 out1 0=3 1=3 5=0 6=54\n"
    )
    net = ncnn_c.Net()
    assert net.load_param_mem(text) == 0
    assert net.load_model(ncnn_c.DataReaderFromEmpty()) == 0
    assert bandwidth.weight_bytes(net) == (32 + 8 + 54) * 4
    empty = ncnn_c.Net()
    assert empty.load_param_mem("7767517\n1 1\nInput in0 0 1 in0\n") == 0
    assert bandwidth.weight_bytes(empty) == 0


def test_weight_bytes_counts_fp16_gemm_copies_at_two_bytes():
    text = "7767517\n2 2\nInput in 0 1 data\nGemm g 1 1 data out 2=0 3=1 4=0 5=1 6=1 8=8 9=16 10=-1\n"
    for values, fp16 in ((np.full(128, 0.5, np.float32), True), (np.full(128, 0.1, np.float32), False)):
        net = ncnn_c.Net()
        assert net.load_param_mem(text) == 0
        assert net.load_model_mem(np.zeros(1, np.uint32).tobytes() + values.tobytes()) == 0
        assert bandwidth.weight_bytes(net) == 128 * 4
        assert bandwidth.weight_bytes(net, fp16_gemm=True) == 128 * (2 if fp16 else 4)
