"""int8 layers in the native CPU plan (ncnn_c/net/native/ops/int8.py, _native/int8.c).

Checked here: ncnn's int8 benchmark networks (random weights, calibrated scales) run native
at 1 and 2 threads (every int8 layer; numpy: DetectionOutput, and LRN / average pooling / BatchNorm
before an int8 layer, whose oneDNN forms round differently), the plan's check against the
numpy layers passes in strict mode, the int8 part is bit-identical to the numpy path (the
blob before the first fp32 layer whose oneDNN form rounds differently: average pooling,
Softmax, LRN), every output is bit-identical between thread counts; the C steps against
the numpy forms on the cases where rounding bites (ties, saturation, NaN, infinities,
every activation they take, with and without bias). Against the PyPI ncnn:
tests/test_networks_int8.py, which runs through the plan too.
"""

from __future__ import annotations

import io
import platform

import numpy as np
import pytest
from oracle import rel_l2
from test_networks import parse_param
from test_networks_int8 import HEAVY, MODELS, _param, _shape, weights

import ncnn_c
from ncnn_c.layer._fused_activation import fused_activation
from ncnn_c.layer._int8 import dequantize, float2int8

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="no oneDNN wheel for this architecture"
)

# the last blob before an fp32 layer whose oneDNN form is not bit-identical to numpy's
EXACT_BLOBS = {
    "squeezenet": "conv10_relu_conv10",
    "mobilenet": "conv6/sep_relu6/sep",
    "resnet18": "res5b_res5b_relu",
    "resnet50": "res5c_res5c_relu",
    "vgg16": "fc8",
}


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("NCNN_C_NATIVE_STRICT", "1")


def _model(name: str):
    return pytest.param(name, marks=pytest.mark.slow) if name in HEAVY else name


def _net(name: str, threads: int, native: bool = True) -> ncnn_c.Net:
    net = ncnn_c.Net()
    net.opt.use_int8_inference = True
    net.opt.num_threads = threads
    net.native_plan = native
    assert net.load_param(str(_param(name))) == 0
    assert net.load_model(io.BytesIO(weights(name, False))) == 0
    return net


def _extract(net, inp: str, x: np.ndarray, names: list[str]) -> list[np.ndarray]:
    with net.create_extractor() as ex:
        ex.input(inp, ncnn_c.Mat(x))
        out = []
        for n in names:
            ret, m = ex.extract(n)
            assert ret == 0, n
            out.append(np.array(m.numpy(), copy=True))
    return out


def _only_plan(net):
    plans = net._view.native_plans
    assert len(plans) == 1
    (plan,) = next(iter(plans._plans.values()))
    return plan


@pytest.mark.parametrize("name", [_model(m) for m in MODELS])
def test_int8_network_native(name):
    param = _param(name)
    (inp, _), *_ = parse_param(param)[0]
    outs = [n for n, _ in parse_param(param)[1]]
    x = np.random.default_rng(3).standard_normal(_shape(param)).astype(np.float32)
    ref = _extract(_net(name, 1, native=False), inp, x, outs)
    got = {}
    for threads in (1, 2):
        net = _net(name, threads)
        _extract(net, inp, x, outs)  # numpy, recorded; the plan built and checked (strict)
        plan = _only_plan(net)
        numpy_layers = [net._view.layers[s.layer].type for s in plan.segments if s.layer >= 0]
        # numpy: what has no native form, and fp32 layers whose native form rounds differently
        # from numpy before an int8 layer quantizes their output (ops/int8.py: EXACT)
        assert set(numpy_layers) <= {"DetectionOutput", "LRN", "Pooling", "BatchNorm"}, numpy_layers
        got[threads] = _extract(net, inp, x, outs)  # native
    for a, b, r, n in zip(got[1], got[2], ref, outs, strict=True):
        assert np.array_equal(a, b), f"{name}:{n}: 1 and 2 threads differ"
        assert rel_l2(a, r) <= 1e-5, f"{name}:{n}: native vs numpy {rel_l2(a, r):.3g}"
        if r.ndim == 1 and r.size >= 10:
            assert int(np.argmax(a)) == int(np.argmax(r))


@pytest.mark.parametrize("name", [_model(m) for m in EXACT_BLOBS])
def test_int8_part_bit_identical(name):
    param = _param(name)
    (inp, _), *_ = parse_param(param)[0]
    blob = EXACT_BLOBS[name]
    x = np.random.default_rng(4).standard_normal(_shape(param)).astype(np.float32)
    (ref,) = _extract(_net(name, 2, native=False), inp, x, [blob])
    net = _net(name, 2)
    _extract(net, inp, x, [blob])
    assert _only_plan(net).segments[0].layer < 0  # a native segment
    (got,) = _extract(net, inp, x, [blob])
    assert np.std(ref) > 0, "a dead signal proves nothing"
    assert np.array_equal(got, ref), f"{name}:{blob}: {np.sum(got != ref)} values differ"


def test_fp32_on_int8_weights_without_int8_inference():
    # use_int8_inference off: the int8 layers run fp32 on dequantized weights, in numpy
    net = _net("squeezenet", 1)
    net.opt.use_int8_inference = False
    x = np.random.default_rng(5).standard_normal((3, 227, 227)).astype(np.float32)
    first = _extract(net, "data", x, ["output"])[0]
    plan = _only_plan(net)
    kinds = {net._view.layers[s.layer].type for s in plan.segments if s.layer >= 0}
    assert kinds == {"Convolution"}
    assert rel_l2(_extract(net, "data", x, ["output"])[0], first) <= 1e-5


def _kernels():
    from ncnn_c.net.native.ops import int8

    got = int8.kernels()
    assert got is not None, "the _int8 extension is not built (python -m ncnn_c._native.build_int8)"
    from ncnn_c._native import _int8

    return _int8.ffi, _int8.lib


def _ptrs(ffi, *arrays):
    return ffi.new("void *[]", [ffi.cast("void *", a.ctypes.data) for a in arrays])


@pytest.mark.parametrize("scale", [1.0, 0.37, 3.3])
def test_quantize_step_is_float2int8(scale):
    ffi, lib = _kernels()
    g = np.random.default_rng(0)
    x = (g.standard_normal(10007) * 100).astype(np.float32)
    x[:200] = np.arange(-100, 100, dtype=np.float32) + 0.5  # ties: away from zero
    edge = [np.nan, np.inf, -np.inf, 3e9, -3e9, 0.49999997, -0.49999997, 127.5, -127.5, -128.6]
    x[200 : 200 + len(edge)] = edge
    q = np.empty(x.size, np.int8)
    ctx = ffi.new("ncnnc_quantize_ctx *", {"n": x.size, "scale": scale})
    lib.ncnnc_int8_quantize(ctx, _ptrs(ffi, x, q))
    assert np.array_equal(q, float2int8(np.multiply(x, np.float32(scale), dtype=np.float32)))


@pytest.mark.parametrize("channels", [3, 16, 37])
@pytest.mark.parametrize("act,params", [(0, (0, 0)), (1, (0, 0)), (2, (0.1, 0)), (3, (-0.5, 0.7))])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("top_scale", [0.0, 2.7])
def test_dequantize_step_is_the_numpy_form(channels, act, params, with_bias, top_scale):
    ffi, lib = _kernels()
    g = np.random.default_rng(channels)
    pixels = 131
    acc = g.integers(-(2**28), 2**28, (pixels, channels)).astype(np.int32)  # beyond 2^24: rounds
    acc[:5] = g.integers(-3000, 3000, (5, channels))
    si = (g.random(channels) * 1e-3).astype(np.float32)
    bias = g.standard_normal(channels).astype(np.float32) if with_bias else None
    ref = dequantize(acc, si[None, :], None if bias is None else bias[None, :])
    fused_activation(ref, act, np.array(params, np.float32))
    if top_scale:
        ref = float2int8(ref * np.float32(top_scale))
    out = np.empty((pixels, channels), np.int8 if top_scale else np.float32)
    fields = {
        "pixels": pixels,
        "channels": channels,
        "scale_in": ffi.cast("const float *", si.ctypes.data),
        "bias": ffi.cast("const float *", bias.ctypes.data) if bias is not None else ffi.NULL,
        "act": act,
        "a0": params[0],
        "a1": params[1],
        "top_scale": top_scale,
    }
    lib.ncnnc_int8_dequantize(ffi.new("ncnnc_dequantize_ctx *", fields), _ptrs(ffi, acc, out))
    # bit patterns: -0.0 and NaN included
    assert np.array_equal(out.view(np.uint8), np.ascontiguousarray(ref).view(np.uint8))


QUANTIZE_NET = """7767517
5 6
Input in 0 1 data 0=9 1=7 2=16
Quantize q 1 1 data dq 0=1
Split s 1 2 dq dq0 dq1
Convolution c0 1 1 dq0 out0 0=8 1=3 4=1 5=1 6=1152 8=2 9=1
ConvolutionDepthWise c1 1 1 dq1 out1 0=16 1=3 4=1 5=1 6=144 7=16 8=1 9=1
"""


def _quantize_weights(g) -> bytes:
    f = np.float32
    parts = [np.array([0.8], f)]  # Quantize: scale_data
    for outc, n, scales in ((8, 1152, 8), (16, 144, 16)):
        parts += [np.zeros(1, np.uint32).view(f), g.standard_normal(n).astype(f)]  # fp32 flag, weights
        parts += [
            g.standard_normal(outc).astype(f),
            (50 + 50 * g.random(scales)).astype(f),
            np.array([0.8], f),
        ]
    return b"".join(p.tobytes() for p in parts)


def test_quantize_layer_feeds_int8_layers_natively(tmp_path):
    (tmp_path / "q.param").write_text(QUANTIZE_NET)
    blob = _quantize_weights(np.random.default_rng(6))
    x = (np.random.default_rng(7).standard_normal((16, 7, 9)) * 40).astype(np.float32)
    got = {}
    for native in (False, True):
        net = ncnn_c.Net()
        net.opt.use_int8_inference = True
        net.native_plan = native
        assert net.load_param(str(tmp_path / "q.param")) == 0
        assert net.load_model(io.BytesIO(blob)) == 0
        got[native] = _extract(net, "data", x, ["out0", "out1"])
        if native:
            plan = _only_plan(net)
            assert all(s.layer < 0 for s in plan.segments), "a numpy layer in the plan"
            got[native] = _extract(net, "data", x, ["out0", "out1"])
    for a, b in zip(got[True], got[False], strict=True):
        assert np.std(b) > 0
        assert np.array_equal(a, b)
