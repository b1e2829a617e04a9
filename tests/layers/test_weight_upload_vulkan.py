"""Weights on their way to the GPU: the fp16 exactness check and the one-copy repack.

``upload_weights`` writes a transposed view straight into mapped memory; these tests pin
its bytes to the plain formula (pad, transpose, make contiguous, cast) for Convolution and
InnerProduct in every packing and storage form, and run fp16-stored InnerProduct weights
against the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import check_layer_gpu, make_bin, make_param, randn, rng

import ncnn_c
from ncnn_c.layer.vulkan import _repack, fp16_exact

pytestmark = pytest.mark.gpu


# -- fp16_exact ---------------------------------------------------------------------------


def test_fp16_exact_accepts_halves_and_returns_them():
    w = np.linspace(-3, 3, 10001, dtype=np.float16).astype(np.float32).reshape(73, 137)
    halves = fp16_exact(w)
    assert halves is not None and halves.dtype == np.float16 and halves.shape == w.shape
    np.testing.assert_array_equal(halves.astype(np.float32), w)


@pytest.mark.parametrize("where", [0, 4095, 4096, 9999])
@pytest.mark.parametrize("bad", [0.1, np.nan, 1e6, 1e-9])
def test_fp16_exact_rejects_one_value_anywhere(where, bad):
    # past the probed prefix too: the prefix only decides a "no"
    w = np.linspace(-3, 3, 10000, dtype=np.float16).astype(np.float32)
    w[where] = bad
    assert fp16_exact(w) is None


def test_fp16_exact_keeps_fp16_subnormals_and_signed_zero():
    w = np.array([0.0, -0.0, 2.0**-24, -(2.0**-20), 65504.0], np.float32)
    halves = fp16_exact(w)
    assert halves is not None
    np.testing.assert_array_equal(halves.astype(np.float32).view(np.uint32), w.view(np.uint32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", [(1030, 1100), (2048, 513), (5, 7)])
def test_repack_equals_a_plain_copy(dtype, shape):
    # distinct values within fp16 range (65504): positions cycle, so misplaced ones show
    src = (np.arange(np.prod(shape)) % 65000).astype(dtype).reshape(shape)
    for view in (src, src.T):  # the tiled path takes the transposed one when it is large
        dst = np.empty(view.shape, dtype)
        _repack(dst, view)
        np.testing.assert_array_equal(dst, view)


# -- the uploaded bytes ---------------------------------------------------------------------


def _gpu_net(layer_type: str, params: dict, weights, shape):
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    assert net.load_param_mem(make_param(layer_type, params, [shape])) == 0
    assert net.load_model_mem(make_bin(weights)) == 0
    layer = net.layers()[1]
    assert layer.vkdev is not None, "the layer is not on the GPU"
    return net, layer


def _words(vkmat) -> np.ndarray:
    """The VkMat's bytes as uint32 words: read from mapped memory (lavapipe), or copied back
    through a staging buffer on the GPU (device-local memory of a discrete GPU)."""
    mapped = vkmat.mapped()
    if mapped is None:
        from ncnn_c.gpu.command import VkCompute

        mapped = ncnn_c.Mat()
        with VkCompute(ncnn_c.get_gpu_device(0)) as cmd:
            cmd.record_download(vkmat, mapped)
            assert cmd.submit_and_wait() == 0
    return np.asarray(mapped).view(np.uint32).copy()


def _expected_conv(layer) -> np.ndarray:
    """Convolution_vulkan's weight layout, the plain way: pad, transpose, copy, cast."""
    g = layer._out_groups
    groups = -(-layer.num_output // (4 * g))
    w = np.zeros((groups * 4 * g, layer._weight2d.shape[1]), np.float32)
    w[: layer.num_output] = layer._weight2d
    if layer._in_pack4:
        maxk = layer.kernel_w * layer.kernel_h
        w = w.reshape(groups, g, 4, -1, 4, maxk).transpose(0, 3, 5, 1, 4, 2)
    else:
        w = w.reshape(groups, g, 4, -1).transpose(0, 3, 1, 2)
    w = np.ascontiguousarray(w).reshape(-1)
    if layer._weight_fp16:
        w = w.astype(np.float16).view(np.float32)
    return w.view(np.uint32)


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32 weights", "fp16 weights"])
@pytest.mark.parametrize("inc,num_output,k", [(3, 7, 3), (8, 12, 1), (8, 40, 3), (12, 6, 2)])
def test_convolution_weight_bytes(fp16, inc, num_output, k, monkeypatch):
    # the direct shader's layout (on a GPU, 40 outputs would take the implicit GEMM, whose
    # layout differs and whose results the convolution grid checks)
    monkeypatch.setenv("NCNN_C_CONV_GEMM", "never")
    g = rng("upload conv", fp16, inc, num_output, k)
    w = randn(g, k * k * inc * num_output, 0.3)
    bias = randn(g, num_output)
    params = {0: num_output, 1: k, 5: 1, 6: w.size}
    net, layer = _gpu_net("Convolution", params, [(w, "fp16") if fp16 else w, (bias, 1)], (inc, 9, 9))
    assert layer._weight_fp16 == fp16
    assert layer._weight_halves is None  # dropped after the upload
    np.testing.assert_array_equal(_words(layer.weight_data_gpu), _expected_conv(layer))
    groups = -(-num_output // (4 * layer._out_groups))
    b = np.zeros(groups * 4 * layer._out_groups, np.float32)
    b[:num_output] = bias
    np.testing.assert_array_equal(_words(layer.bias_data_gpu), b.view(np.uint32))
    net.clear()


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32 weights", "fp16 weights"])
# the last is large enough for the tiled transposition (over 2**20 weights, edges not a whole tile)
@pytest.mark.parametrize("num_input,num_output", [(10, 7), (64, 16), (33, 5), (1030, 1027)])
def test_innerproduct_weight_bytes(fp16, num_input, num_output):
    g = rng("upload ip", fp16, num_input, num_output)
    w = randn(g, num_input * num_output)
    params = {0: num_output, 1: 0, 2: w.size}
    net, layer = _gpu_net("InnerProduct", params, [(w, "fp16") if fp16 else w], (num_input,))
    assert layer._weight_fp16 == fp16
    groups = -(-num_output // 4)
    padded = np.zeros((groups * 4, num_input), np.float32)
    padded[:num_output] = layer._weight
    expected = np.ascontiguousarray(padded.T).reshape(-1)
    if fp16:
        expected = expected.astype(np.float16).view(np.float32)
    np.testing.assert_array_equal(_words(layer.weight_data_gpu), expected.view(np.uint32))
    net.clear()


@pytest.mark.parametrize("num_output", [7, 16])
def test_innerproduct_fp16_weights_grid(num_output):
    g = rng("ip fp16 grid", num_output)
    w = randn(g, 30 * num_output, 0.3)
    params = {0: num_output, 1: 1, 2: w.size, 9: 1}
    check_layer_gpu("InnerProduct", params, [(w, "fp16"), (randn(g, num_output), 1)], [randn(g, (30,))])


def test_staged_upload_gives_the_same_bytes(monkeypatch):
    """Where device memory is not host visible (a discrete GPU), the repacked weights are
    repacked into a staging buffer and copied on the GPU: the same bytes
    as the direct write into mapped memory. Lavapipe's memory is mapped, so the test hides
    that from upload_weights."""
    from ncnn_c.gpu.vkmat import VkMat

    g = rng("upload staged")
    w = randn(g, 3 * 3 * 8 * 12, 0.3)
    params = {0: 12, 1: 3, 5: 1, 6: w.size}
    weights = [w, (randn(g, 12), 1)]
    net, layer = _gpu_net("Convolution", params, weights, (8, 9, 9))
    direct = _words(layer.weight_data_gpu), _words(layer.bias_data_gpu)
    net.clear()
    monkeypatch.setattr(VkMat, "host_view", lambda self: None)
    from ncnn_c.gpu.command import VkCompute

    copies = []
    real_copy = VkCompute._copy
    monkeypatch.setattr(VkCompute, "_copy", lambda self, *a: (copies.append(a[2]), real_copy(self, *a)))
    net, layer = _gpu_net("Convolution", params, weights, (8, 9, 9))
    assert len(copies) >= 2, "the weights and bias did not go through staging buffers"
    staged = _words(layer.weight_data_gpu), _words(layer.bias_data_gpu)
    net.clear()
    for a, b in zip(direct, staged, strict=True):
        np.testing.assert_array_equal(a, b)
