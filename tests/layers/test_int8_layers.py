"""int8 Convolution, ConvolutionDepthWise and InnerProduct against the PyPI ncnn's int8 path.

Cases follow ncnn's tests/test_convolution_3.cpp, test_convolutiondepthwise_1.cpp and
test_innerproduct.cpp int8 cases: weight scales per output channel (per group, or one, for
ConvolutionDepthWise), the bottom scale, the top scale with int8_scale_term > 100 (an int8
top), weights stored as fp32 (quantized at load) or as int8 (ModelBin's int8 flag), fp32 or
int8 inputs, every padding form and fused activation; the layer and net paths. Each case runs on every
backend (oracle.backends: the CPU, and GPU option sets; the long sweeps on SPOT_GRID): the
GPU int8 layers quantize their bottom (or take an int8 one as it is: an int8 host Mat, a
requantized top) and sum int8 products exactly in fp32 (ncnn_c/layer/vulkan/_int8.py), so
the bar is the CPU's on every set; an int8 top comes back as the int8 Mat the CPU gives.

The int32 sums are exact on both sides, so int8 (requantized) results are exact, but for the
activations ncnn computes with approximate vector exp / tanh (sigmoid, mish) or a fused
multiply-add (hardswish), where a value sitting on a rounding edge may move by 1. fp32
(dequantized) results agree to 1e-6 relative L2: ncnn_c fuses ``sum * scale_in + bias`` as
ncnn's vector kernels do, some of ncnn's scalar loops round the product first (an ulp apart).
The oracle runs with packing off: its packed depthwise kernels use an approximate reciprocal
of the scales (_mm_rcp_ps, ~1e-4 relative); the networks test compares against those.
"""

from __future__ import annotations

import logging
import os
import struct
import tempfile

import numpy as np
import pytest
from oracle import CPU_BACKEND, FP32_FLAGS, GPU_GRID, SPOT_GRID, _apply, backends, make_param, rel_l2, rng

from ncnn_c.layer import create_layer_cpu
from ncnn_c.layer._int8 import float2int8
from ncnn_c.mat import Mat
from ncnn_c.modelbin import INT8_TAG, ModelBinFromMatArray
from ncnn_c.option import Option
from ncnn_c.paramdict import ParamDict

INEXACT_ACTIVATIONS = (4, 5, 6)  # sigmoid, mish (approximate vector exp / tanh), hardswish (fused)


# -- model bytes and runners ------------------------------------------------------------------
def blob(arr, kind) -> bytes:
    """One weight blob as ncnn stores it: 0 flagged fp32, 1 raw fp32, "int8" flagged int8."""
    if kind == "int8":
        out = struct.pack("<I", INT8_TAG) + np.asarray(arr, np.int8).tobytes()
    elif kind == 0:
        out = struct.pack("<I", 0) + np.asarray(arr, "<f4").tobytes()
    else:
        out = np.asarray(arr, "<f4").tobytes()
    return out + b"\0" * (-len(out) % 4)


def oracle(text: str, bin_bytes: bytes, x: np.ndarray, **flags) -> np.ndarray:
    import ncnn

    net = ncnn.Net()
    _apply(net.opt, FP32_FLAGS)
    _apply(net.opt, flags)
    with tempfile.TemporaryDirectory() as tmp:
        ppath, bpath = os.path.join(tmp, "m.param"), os.path.join(tmp, "m.bin")
        with open(ppath, "w") as f:
            f.write(text)
        with open(bpath, "wb") as f:
            f.write(bin_bytes)
        assert net.load_param(ppath) == 0 and net.load_model(bpath) == 0
    with net.create_extractor() as ex:
        ex.input("in0", ncnn.Mat(np.ascontiguousarray(x)).clone())
        ret, m = ex.extract("out0")
        assert ret == 0
        out = np.array(m, dtype=np.float32, copy=True)
        del m
    net.clear()
    return out


def run_ours_layer(layer_type: str, params: dict, weights, x: np.ndarray, opt=None):
    """The layer driven directly, int8 weights handed over as int8 Mats."""
    layer = create_layer_cpu(layer_type)
    pd = ParamDict()
    for k, v in params.items():
        pd.set(k, np.asarray(v, np.float32) if isinstance(v, list) else v)
    if layer.load_param(pd) != 0:
        return -1, None
    mats = [Mat(np.ascontiguousarray(a, np.int8 if kind == "int8" else np.float32)) for a, kind in weights]
    if layer.load_model(ModelBinFromMatArray(mats)) != 0:
        return -1, None
    opt = opt or Option()
    opt.num_threads = 1
    assert layer.create_pipeline(opt) == 0
    top = Mat()
    ret = layer.forward(Mat(np.ascontiguousarray(x)), top, opt)
    return ret, (np.array(top.numpy(), dtype=np.float32, copy=True) if ret == 0 else None)


def compare(got, ref, requant: bool, act: int, what: str) -> None:
    if not requant:
        err = rel_l2(got, ref)
        assert err <= 1e-6, f"{what}: relative L2 error {err:.3g}"
    elif act not in INEXACT_ACTIVATIONS:
        np.testing.assert_array_equal(got, ref, err_msg=what)
    else:
        d = np.abs(got - ref)
        assert d.max() <= 1 and (d > 0).mean() < 0.02, f"{what}: {int((d > 0).sum())} values off"


def absmax_scale(a: np.ndarray, axis=None) -> np.ndarray:
    m = np.abs(a).max(axis=axis)
    return (127.0 / np.where(m == 0, 1, m)).astype(np.float32)


def act_params(g, act: int) -> list[float]:
    alpha = g.uniform(0, 1) if act == 6 else g.uniform(-1, 0)
    return [float(alpha), float(g.uniform(0, 1))]


def check(backend, layer_type, params, weights, x, requant, act, flags=(), paths=("layer", "net")):
    """One case on ``backend`` against the oracle's int8 path, under each of the oracle's
    algorithm ``flags`` on the CPU (the first one on the GPU)."""
    text = make_param(layer_type, params, [x.shape])
    bin_bytes = b"".join(blob(a, kind) for a, kind in weights)
    what = f"{layer_type} {params} input {x.shape} {x.dtype} {backend}"
    gpu = backend != CPU_BACKEND
    for fl in (flags or ({},))[: 1 if gpu else None]:
        ref = oracle(text, bin_bytes, x, **fl)
        if gpu:
            got = run_ours_net(text, bin_bytes, x, GPU_GRID[backend.removeprefix("vk-")])
            compare(got, ref, requant, act, f"{what} {fl}")
            continue
        if "layer" in paths:
            ret, got = run_ours_layer(layer_type, params, weights, x)
            assert ret == 0, what
            compare(got, ref, requant, act, f"{what} layer {fl}")
        if "net" in paths:
            compare(run_ours_net(text, bin_bytes, x), ref, requant, act, f"{what} net {fl}")


def run_ours_net(text, bin_bytes, x, gpu_flags=None) -> np.ndarray:
    """ncnn_c's Net, fed ``x`` as it is (an int8 array as an int8 Mat), on the CPU or, with
    ``gpu_flags`` (a GPU_GRID set), on the GPU with every layer there."""
    import ncnn_c

    net = ncnn_c.Net()
    _apply(net.opt, FP32_FLAGS)
    if gpu_flags is not None:
        net.opt.use_vulkan_compute = True
        _apply(net.opt, gpu_flags)
    assert net.load_param_mem(text) == 0 and net.load_model_mem(bin_bytes) == 0
    if gpu_flags is not None:
        on_cpu = [layer.name for layer in net.layers() if layer.vkdev is None]
        assert not on_cpu, f"layers {on_cpu} did not get the GPU"
    with net.create_extractor() as ex:
        assert ex.input("in0", ncnn_c.Mat(np.ascontiguousarray(x))) == 0
        ret, m = ex.extract("out0")
        assert ret == 0, text
        out = np.array(m.numpy(), dtype=np.float32, copy=True)
    net.clear()
    return out


# -- Convolution --------------------------------------------------------------------------------
def conv_case(backend, w, h, c, outch, kernel, dilation, stride, pad, bias, requant=False, term=0,
              stored="fp32", input_int8=False, flags=()):  # fmt: skip
    g = rng(
        "conv-int8", w, h, c, outch, kernel, dilation, stride, pad, bias, requant, term, stored, input_int8
    )
    if term == 0:
        term = 101 if requant else 1
    requant = term > 100
    x = g.uniform(-1.2, 1.2, (c, h, w)).astype(np.float32)
    wt = g.uniform(-1.2, 1.2, (outch, c * kernel * kernel)).astype(np.float32)
    wscale = absmax_scale(wt, 1)
    if kernel == 3 and dilation == 1 and stride == 1:
        wscale /= 4  # ncnn's "6 bit" case: small int8 weights
    bscale = absmax_scale(x)
    act = int(g.integers(0, 7))
    params = {0: outch, 1: kernel, 2: dilation, 3: stride, 4: pad, 5: bias, 6: wt.size, 8: term, 9: act}
    params[10] = act_params(g, act)
    wblob = (float2int8(wt * wscale[:, None]), "int8") if stored == "int8" else (wt, 0)
    weights = [wblob] + ([(g.uniform(-1.2, 1.2, outch), 1)] if bias else [])
    weights += [(wscale, 1), (bscale.reshape(1), 1)]
    if requant:
        weights.append((absmax_scale(x).reshape(1), 1))
    if input_int8:
        x = float2int8(x * bscale)
    check(backend, "Convolution", params, weights, x, requant, act, flags)


KDSP = [(1, 1, 1, 0), (1, 1, 2, 0), (2, 1, 1, 1), (2, 1, 2, -233), (3, 1, 1, 1), (3, 1, 2, 1), (3, 2, 1, 1),
        (4, 1, 1, 2), (4, 1, 2, -233), (4, 2, 1, -234), (5, 1, 1, -234), (5, 1, 2, 2), (5, 2, 2, 2),
        (7, 1, 1, 3), (7, 1, 2, 3), (7, 2, 1, -233)]  # fmt: skip


@pytest.mark.parametrize("requant", [False, True])
@pytest.mark.parametrize("c,outch", [(1, 1), (3, 3), (8, 8), (16, 15), (15, 16)])
@pytest.mark.parametrize("k,d,s,p", KDSP, ids=str)
@pytest.mark.parametrize("backend", backends("Convolution", grid=SPOT_GRID))
def test_convolution_int8(k, d, s, p, c, outch, requant, backend):
    conv_case(backend, 9, 7, c, outch, k, d, s, p, 1, requant)


@pytest.mark.parametrize(
    "case",
    [
        (11, 11, 8, 16, 3, 1, 1, 1, 1), (13, 16, 16, 24, 3, 1, 1, 1, 1), (8, 8, 16, 24, 3, 1, 1, 1, 0),
        (4, 8, 16, 24, 3, 1, 1, 1, 1), (4, 20, 16, 24, 3, 1, 1, 1, 0), (6, 7, 64, 64, 3, 1, 2, 0, 1),
        (25, 33, 16, 15, 3, 1, 1, 1, 0), (25, 33, 31, 31, 3, 1, 1, 1, 0), (7, 7, 15, 12, 3, 1, 1, 1, 0),
        (5, 6, 31, 9, 5, 1, 1, 0, 1), (5, 7, 32, 8, 5, 1, 2, 0, 1), (16, 10, 31, 32, 2, 1, 3, 0, 0),
        (5, 10, 5, 32, 3, 2, 1, 0, 1), (3, 9, 16, 13, 2, 2, 1, 0, 0), (33, 5, 15, 5, 2, 1, 3, 0, 1),
        (23, 11, 33, 28, 5, 1, 1, 0, 1), (3, 63, 2, 28, 2, 1, 2, 0, 0),
    ],
    ids=str,
)  # fmt: skip
@pytest.mark.parametrize("requant", [False, True])
@pytest.mark.parametrize("backend", backends("Convolution", grid=SPOT_GRID))
def test_convolution_int8_shapes(case, requant, backend):
    # every algorithm the oracle picks: its default (Winograd / im2col GEMM), plain packed loops
    flags = ({}, {"use_winograd_convolution": False, "use_sgemm_convolution": False})
    conv_case(backend, *case, requant=requant, flags=flags)


@pytest.mark.parametrize("term", [2, 102, 1, 101])
@pytest.mark.parametrize("stored", ["fp32", "int8"])
@pytest.mark.parametrize("input_int8", [False, True])
@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_int8_storage_and_inputs(term, stored, input_int8, backend):
    # an int8 input goes up to the GPU marked as int8: the layer takes it as it is
    conv_case(backend, 7, 5, 4, 8, 1, 1, 1, 0, 1, term=term, stored=stored, input_int8=input_int8)
    conv_case(backend, 9, 7, 8, 12, 2, 1, 2, 1, 1, term=term, stored=stored, input_int8=input_int8)
    conv_case(backend, 12, 10, 24, 40, 3, 1, 1, 1, 0, term=term, stored=stored, input_int8=input_int8)


@pytest.mark.parametrize("backend", backends("Convolution", grid=SPOT_GRID))
def test_convolution_int8_big_channels_exact(backend):
    # 3x3 over 1200 channels: K = 10800 > 1024, the sums need more than fp32's 24 bits (the
    # GPU's fp32 sums round there, ~1e-7 relative, inside the 1e-6 of a dequantized top)
    conv_case(backend, 6, 5, 1200, 8, 3, 1, 1, 1, 1, term=2, flags=({"use_winograd_convolution": False},))


@pytest.mark.parametrize("backend", backends("Convolution"))
def test_convolution_int8_pad_value(backend):
    g = rng("conv-int8-padvalue")
    x = g.uniform(-1, 1, (3, 6, 7)).astype(np.float32)
    wt = g.uniform(-1, 1, (4, 27)).astype(np.float32)
    params = {0: 4, 1: 3, 4: 2, 5: 0, 6: wt.size, 8: 2, 18: -3.7}
    weights = [(wt, 0), (absmax_scale(wt, 1), 1), (absmax_scale(x).reshape(1), 1)]
    check(backend, "Convolution", params, weights, x, False, 0)


# -- ConvolutionDepthWise -----------------------------------------------------------------------
def dw_case(backend, w, h, c, outch, kernel, dilation, stride, pad, bias, group, requant, term=None):
    g = rng("convdw-int8", w, h, c, outch, kernel, dilation, stride, pad, bias, group, requant, term)
    if term is None:
        term = 101 if requant else 1
    x = g.uniform(-1.2, 1.2, (c, h, w)).astype(np.float32)
    wt = g.uniform(-1.2, 1.2, (group, outch // group * (c // group) * kernel * kernel)).astype(np.float32)
    wscale = absmax_scale(wt, 1)
    if term in (2, 102):
        wscale = wscale.min(keepdims=True)
    act = int(g.integers(0, 7))
    params = {0: outch, 1: kernel, 2: dilation, 3: stride, 4: pad, 5: bias, 6: wt.size, 7: group, 8: term}
    params.update({9: act, 10: act_params(g, act)})
    weights = [(wt, 0)] + ([(g.uniform(-1.2, 1.2, outch), 1)] if bias else [])
    weights += [(wscale, 1), (absmax_scale(x).reshape(1), 1)]
    if term > 100:
        weights.append((absmax_scale(x).reshape(1), 1))
    check(backend, "ConvolutionDepthWise", params, weights, x, term > 100, act)


@pytest.mark.parametrize("requant", [False, True])
@pytest.mark.parametrize("k,d,s,p", KDSP, ids=str)
@pytest.mark.parametrize("c,group", [(1, 1), (4, 4), (8, 8), (16, 16), (12, 4), (16, 2)])
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise", grid=SPOT_GRID))
def test_convolutiondepthwise_int8(k, d, s, p, c, group, requant, backend):
    dw_case(backend, 15, 7, c, c, k, d, s, p, 1, group, requant)


@pytest.mark.parametrize("term", [1, 2, 101, 102])
@pytest.mark.parametrize("backend", backends("ConvolutionDepthWise"))
def test_convolutiondepthwise_int8_scale_forms(term, backend):
    dw_case(backend, 9, 8, 16, 16, 3, 1, 1, 1, 1, 16, term > 100, term)
    dw_case(backend, 9, 8, 16, 32, 3, 1, 2, 1, 0, 4, term > 100, term)


# -- InnerProduct -------------------------------------------------------------------------------
def ip_case(backend, shape, outch, bias, stored="fp32", input_int8=False):
    g = rng("ip-int8", shape, outch, bias, stored, input_int8)
    x = g.uniform(-1.2, 1.2, shape).astype(np.float32)
    num_input = shape[-1] if len(shape) == 2 else x.size
    wt = g.uniform(-1.2, 1.2, (outch, num_input)).astype(np.float32)
    wscale, bscale = absmax_scale(wt, 1), absmax_scale(x)
    act = int(g.integers(0, 7))
    params = {0: outch, 1: bias, 2: wt.size, 8: 2, 9: act, 10: act_params(g, act)}
    wblob = (float2int8(wt * wscale[:, None]), "int8") if stored == "int8" else (wt, 0)
    weights = [wblob] + ([(g.uniform(-1.2, 1.2, outch), 1)] if bias else [])
    weights += [(wscale, 1), (bscale.reshape(1), 1)]
    if input_int8:
        x = float2int8(x * bscale)
    check(backend, "InnerProduct", params, weights, x, False, act)


@pytest.mark.parametrize("bias", [0, 1])
@pytest.mark.parametrize(
    "shape,outch",
    [((1, 3, 1), 1), ((2, 2, 1), 2), ((3, 3, 3), 7), ((8, 2, 4), 8), ((12, 3, 2), 12), ((16, 1, 4), 16),
     ((5, 7, 1), 13), ((32,), 32), ((48,), 15), ((7, 24), 16), ((16, 9), 8), ((15, 24), 15), ((2, 3, 4, 5), 9),
     ((2000,), 12)],
    ids=str,
)  # fmt: skip
@pytest.mark.parametrize("backend", backends("InnerProduct", grid=SPOT_GRID))
def test_innerproduct_int8(shape, outch, bias, backend):
    ip_case(backend, shape, outch, bias)


@pytest.mark.parametrize("stored", ["fp32", "int8"])
@pytest.mark.parametrize("input_int8", [False, True])
@pytest.mark.parametrize("backend", backends("InnerProduct"))
def test_innerproduct_int8_storage_and_inputs(stored, input_int8, backend):
    ip_case(backend, (8, 3, 3), 10, 1, stored, input_int8)
    ip_case(backend, (6, 40), 9, 1, stored, input_int8)


# -- without use_int8_inference, bad models ---------------------------------------------------
@pytest.mark.parametrize("layer_type", ["Convolution", "ConvolutionDepthWise", "InnerProduct"])
def test_fp32_forward_on_dequantized_weights(layer_type):
    g = rng("int8-fp32", layer_type)
    x = g.uniform(-1, 1, (4, 6, 5)).astype(np.float32)
    wt = g.uniform(-1, 1, (4, 36 if layer_type == "Convolution" else 9)).astype(np.float32)
    if layer_type == "InnerProduct":
        wt = g.uniform(-1, 1, (4, x.size)).astype(np.float32)
        params = {0: 4, 1: 1, 2: wt.size, 8: 2}
    else:
        params = {0: 4, 1: 3, 4: 1, 5: 1, 6: wt.size, 8: 2}
        if layer_type == "ConvolutionDepthWise":
            params[7] = 4
    wscale = absmax_scale(wt, 1)
    if layer_type == "ConvolutionDepthWise":
        wscale = wscale[:1]
    bias = g.uniform(-1, 1, 4).astype(np.float32)
    weights = [(wt, 0), (bias, 1), (wscale, 1), (absmax_scale(x).reshape(1), 1)]
    opt = Option()
    opt.use_int8_inference = False
    ret, got = run_ours_layer(layer_type, params, weights, x, opt)
    assert ret == 0
    # the same layer in fp32 over the dequantized weights
    w8 = float2int8(wt * np.broadcast_to(wscale, (4,))[:, None]) / np.broadcast_to(wscale, (4,))[:, None]
    fp32 = {k: v for k, v in params.items() if k != 8}
    ret, ref = run_ours_layer(layer_type, fp32, [(w8.astype(np.float32), 0), (bias, 1)], x)
    assert ret == 0
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    # and close to the int8 result
    ret, q = run_ours_layer(layer_type, params, weights, x)
    assert ret == 0 and rel_l2(got, q) < 2e-2


def _errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "layer_type,params,n_weights,word",
    [
        ("Convolution", {0: 2, 1: 1, 6: 6, 8: 2}, 1, "weight_data_int8_scales"),
        ("Convolution", {0: 2, 1: 1, 6: 6, 8: 2}, 2, "bottom_blob_int8_scales"),
        ("Convolution", {0: 2, 1: 1, 6: 6, 8: 102}, 3, "top_blob_int8_scales"),
        ("ConvolutionDepthWise", {0: 3, 1: 1, 6: 3, 7: 3, 8: 101}, 3, "top_blob_int8_scales"),
        ("InnerProduct", {0: 2, 2: 6, 8: 2}, 2, "bottom_blob_int8_scales"),
    ],
    ids=str,
)
def test_missing_int8_scales_are_refused(caplog, layer_type, params, n_weights, word):
    weights = [(np.ones(6, np.float32), 0), (np.ones(3, np.float32), 1), (np.ones(1, np.float32), 1)]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_ours_layer(layer_type, params, weights[:n_weights], np.ones((3, 1, 1), np.float32))
    # the ModelBin says it ran out; the layer names what was missing
    errors = [e for e in _errors(caplog) if not e.startswith("ModelBin")]
    assert ret != 0
    assert len(errors) == 1 and layer_type in errors[0] and word in errors[0], errors


@pytest.mark.parametrize(
    "layer_type,params,word",
    [
        ("ConvolutionDepthWise", {0: 3, 1: 1, 6: 3, 7: 3, 8: 3}, "int8_scale_term"),
        ("Convolution", {0: 2, 1: 1, 6: 6, 8: 2, 19: 1}, "dynamic_weight"),
    ],
    ids=str,
)
def test_bad_int8_params_are_refused(caplog, layer_type, params, word):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_ours_layer(layer_type, params, [], np.ones((3, 1, 1), np.float32))
    errors = _errors(caplog)
    assert ret != 0 and len(errors) == 1 and word in errors[0], errors


@pytest.mark.parametrize("layer_type", ["Convolution", "InnerProduct"])
def test_int8_weights_without_scale_term_are_refused(caplog, layer_type):
    params = {0: 2, 1: 1, 6: 6} if layer_type == "Convolution" else {0: 2, 2: 6}
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_ours_layer(
            layer_type, params, [(np.ones(6, np.int8), "int8")], np.ones((3, 1, 1), np.float32)
        )
    errors = _errors(caplog)
    assert ret != 0 and len(errors) == 1 and "int8_scale_term" in errors[0], errors


def test_convolution_int8_over_a_vector_is_innerproduct():
    # ncnn's deprecated 1x1-over-a-vector form (ncnn's own int8 forward mistakes the vector
    # for one channel): here the InnerProduct it stands for
    g = rng("conv-int8-flat")
    x = g.uniform(-1, 1, 24).astype(np.float32)
    wt = g.uniform(-1, 1, (6, 24)).astype(np.float32)
    weights = [(wt, 0), (g.uniform(-1, 1, 6), 1), (absmax_scale(wt, 1), 1), (absmax_scale(x).reshape(1), 1)]
    ret, got = run_ours_layer("Convolution", {0: 6, 1: 1, 5: 1, 6: wt.size, 8: 2, 9: 1}, weights, x)
    assert ret == 0 and got.shape == (6,)
    ret, ref = run_ours_layer("InnerProduct", {0: 6, 1: 1, 2: wt.size, 8: 2, 9: 1}, weights, x)
    assert ret == 0
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("layer_type", ["Convolution", "Quantize"])
@pytest.mark.parametrize("backend", backends("Convolution", grid=["fp32", "fp16sa-pack"]))
def test_int8_top_extracted_as_on_the_cpu(layer_type, backend):
    # an int8 top (a requantizing layer's, a Quantize's) comes out of a Vulkan net as the Mat
    # the CPU net holds there: the same element size and the int8 values, not q / top_scale
    import ncnn_c

    g = rng("int8-extract", layer_type)
    x = g.uniform(-1, 1, (8, 6, 5)).astype(np.float32)
    if layer_type == "Quantize":
        params, weights = {0: 1}, [(np.full(1, 90.0, np.float32), 1)]
    else:
        wt = g.uniform(-1, 1, (8, 72)).astype(np.float32)
        params = {0: 8, 1: 3, 4: 1, 5: 0, 6: wt.size, 8: 101, 9: 1}
        weights = [
            (wt, 0),
            (absmax_scale(wt, 1), 1),
            (absmax_scale(x).reshape(1), 1),
            (np.full(1, 40.0, np.float32), 1),
        ]
    text = make_param(layer_type, params, [x.shape])
    bin_bytes = b"".join(blob(a, kind) for a, kind in weights)
    mats = []
    for gpu_flags in (None, GPU_GRID[backend.removeprefix("vk-")] if backend != CPU_BACKEND else None):
        net = ncnn_c.Net()
        _apply(net.opt, FP32_FLAGS)
        if gpu_flags is not None:
            net.opt.use_vulkan_compute = True
            _apply(net.opt, gpu_flags)
        assert net.load_param_mem(text) == 0 and net.load_model_mem(bin_bytes) == 0
        with net.create_extractor() as ex:
            assert ex.input("in0", ncnn_c.Mat(x)) == 0
            ret, m = ex.extract("out0")
            assert ret == 0
            mats.append((m.elemsize, np.array(m.numpy(), dtype=np.float32, copy=True)))
    (cpu_size, cpu), (size, got) = mats
    assert size == cpu_size and np.abs(cpu).max() > 10
    np.testing.assert_array_equal(got, cpu)
    np.testing.assert_array_equal(got, oracle(text, bin_bytes, x))
