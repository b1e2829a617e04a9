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


# the detection heads and GoogLeNet (10-15 s each on two cores) join the heavy ones in the slow
# run CI also runs; the main run keeps SqueezeNet, MobileNet and ResNet18
SLOW = HEAVY | {"googlenet", "mobilenet_ssd", "squeezenet_ssd"}


def _model(name: str):
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name


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
    plans = net._native.plans
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


# -- Quantize / Dequantize / Requantize with per-channel vectors (the channels step) -----------
# the walks (outer, groups, inner, block) of the layouts a blob has in the plan: plain (one
# channel per run), channels-last (a vector per row), oneDNN's blocked ones (padding channels
# included), a run longer than a chunk, short odd ones
WALKS = [(1, 5, 37, 1), (37, 1, 1, 5), (1, 3, 21, 16), (1, 2, 5000, 1), (300, 1, 1, 33), (1, 40, 600, 4)]
# (op, activation, its params, with a bias)
CHANNEL_OPS = [(0, 0, (0, 0), False)] + [
    (op, act, params, bias)
    for op in (1, 2)
    for act, params in (
        [(0, (0, 0))] if op == 1 else [(0, (0, 0)), (1, (0, 0)), (2, (0.1, 0)), (3, (-0.5, 0.7))]
    )
    for bias in (False, True)
]


def _channels_ref(op, x, s, b, so, act, params):
    """The numpy layers' arithmetic with the per-element coefficients ``s`` / ``b`` / ``so``."""
    if op == 0:
        return float2int8(np.multiply(x, s, dtype=np.float32))
    v = dequantize(x, s, b)
    fused_activation(v, act, np.array(params, np.float32))
    return v if op == 1 else float2int8(np.multiply(v, so, dtype=np.float32))


@pytest.mark.parametrize("scalar", [False, True], ids=["simd", "scalar"])
@pytest.mark.parametrize("op,act,params,with_bias", CHANNEL_OPS, ids=str)
@pytest.mark.parametrize("walk", WALKS, ids=str)
def test_channels_step_is_the_numpy_form(walk, op, act, params, with_bias, scalar):
    ffi, lib = _kernels()
    g = np.random.default_rng(list(walk) + [op, act])
    outer, groups, inner, block = walk
    n = outer * groups * inner * block
    # each element's channel: g * block + k of (o, g, i, k)
    ch = np.broadcast_to(
        np.arange(groups)[:, None, None] * block + np.arange(block), (outer, groups, inner, block)
    )
    ch = ch.ravel()
    s = (g.random(groups * block) * (100 if op == 0 else 1e-3)).astype(np.float32)
    b = g.standard_normal(groups * block).astype(np.float32) if with_bias else None
    so = (g.random(groups * block) * 50).astype(np.float32) if op == 2 else None
    if op == 0:
        x = (g.standard_normal(n) * 2).astype(np.float32)
        x[:9] = [np.nan, np.inf, -np.inf, 0.5, -0.5, 1e10, -0.0, 0.49999997, -1.5]
    else:
        x = g.integers(-(2**28), 2**28, n).astype(np.int32)  # beyond 2^24: the fp32 cast rounds
        x[:5] = [0, 1, -1, 2**31 - 1, -(2**31)]
    ref = _channels_ref(
        op, x, s[ch], None if b is None else b[ch], None if so is None else so[ch], act, params
    )
    out = np.empty(n, np.float32 if op == 1 else np.int8)

    def ptr(a):
        return ffi.NULL if a is None else ffi.cast("const float *", a.ctypes.data)

    fields = dict(outer=outer, groups=groups, inner=inner, block=block, scale=ptr(s), bias=ptr(b))
    fields.update(scale_out=ptr(so), op=op, act=act, a0=params[0], a1=params[1])
    lib.ncnnc_int8_scalar_only(int(scalar))
    try:
        lib.ncnnc_int8_channels(ffi.new("ncnnc_channels_ctx *", fields), _ptrs(ffi, x, out))
    finally:
        lib.ncnnc_int8_scalar_only(0)
    assert np.array_equal(out.view(np.uint8), ref.view(np.uint8)), f"{np.sum(out != ref)} values differ"


def _f(*a) -> np.ndarray:
    return np.asarray(a, np.float32).ravel()


def _conv_int8(g, cin: int, cout: int, k: int, requant: bool = False) -> tuple[str, list]:
    """Convolution params (``0=cout 1=k 4=k//2 5=1 6=.. 8=..``) and weights of an int8 layer."""
    n = cout * cin * k * k
    param = f"0={cout} 1={k} 4={k // 2} 5=1 6={n} 8={101 if requant else 1}"
    w = [(g.standard_normal(n).astype(np.float32), 0), (g.standard_normal(cout).astype(np.float32), 1)]
    w += [((50 + 50 * g.random(cout)).astype(np.float32), 1), (_f(0.8), 1)]
    return param, w + ([(_f(3.0), 1)] if requant else [])


def _int32(g, shape, hi=2**20) -> np.ndarray:
    """int32 values as the fp32 bits the harness feeds (as ncnn's int32 Mats)."""
    x = g.integers(-hi, hi, shape).astype(np.int32)
    x.reshape(-1)[:4] = [0, 1, -1, 7]
    return x.view(np.float32)


def _net_dequantize(dims: int):
    g = np.random.default_rng(10 + dims)
    shape = {1: (37,), 2: (9, 13), 3: (5, 6, 7)}[dims]
    rows = 1 if dims == 1 else shape[0]  # a 1-D blob takes one scale / bias
    text = f"""7767517
3 3
Input in0 0 1 in0
Dequantize dq 1 1 in0 dq0 0={rows} 1={rows}
ReLU relu 1 1 dq0 out0
"""
    w = [((g.random(rows) * 1e-3).astype(np.float32), 1), (g.standard_normal(rows).astype(np.float32), 1)]
    return text, w, [_int32(g, shape, 2**28)], ["out0"]


def _net_requantize_conv(act: str):
    g = np.random.default_rng(20)
    c = 8
    conv, cw = _conv_int8(g, c, 6, 3)
    text = f"""7767517
5 6
Input in0 0 1 in0
Requantize rq 1 1 in0 q 0={c} 1={c} 2={c} {act}
Split s 1 2 q q0 q1
Convolution conv 1 1 q0 out0 {conv}
ConvolutionDepthWise dw 1 1 q1 out1 0={c} 1=3 4=1 5=1 6={c * 9} 7={c} 8=1
"""
    w = [((g.random(c) * 2e-3).astype(np.float32), 1), ((40 + 20 * g.random(c)).astype(np.float32), 1)]
    w += [(g.standard_normal(c).astype(np.float32), 1)] + cw
    w += [(g.standard_normal(c * 9).astype(np.float32), 0), (g.standard_normal(c).astype(np.float32), 1)]
    w += [((50 + 50 * g.random(c)).astype(np.float32), 1), (_f(0.8), 1)]
    return text, w, [_int32(g, (c, 9, 7), 2**16)], ["out0", "out1"]


def _net_requantize_innerproduct():
    g = np.random.default_rng(21)
    n, m = 48, 10
    text = f"""7767517
3 3
Input in0 0 1 in0
Requantize rq 1 1 in0 q 0=1 1=1 2=1 3=3 -23304=2,-20.0,20.0
InnerProduct ip 1 1 q out0 0={m} 1=1 2={n * m} 8=1
"""
    w = [(_f(2e-3), 1), (_f(5.0), 1), (_f(0.25), 1)]
    w += [(g.standard_normal(n * m).astype(np.float32), 0), (g.standard_normal(m).astype(np.float32), 1)]
    w += [((50 + 50 * g.random(m)).astype(np.float32), 1), (_f(0.9), 1)]
    return text, w, [_int32(g, (n,), 2**14)], ["out0"]


def _net_quantize_per_channel(pool: str):
    # a native max pooling (exact: an int8 layer may quantize its output natively) before a
    # per-channel Quantize into an int8 convolution
    g = np.random.default_rng(22)
    c = 20
    conv, cw = _conv_int8(g, c, 6, 3, requant=False)
    text = f"""7767517
4 4
Input in0 0 1 in0
Pooling p 1 1 in0 p0 0=0 {pool}
Quantize qz 1 1 p0 q 0={c}
Convolution conv 1 1 q out0 {conv}
"""
    w = [((10 + 30 * g.random(c)).astype(np.float32), 1)] + cw
    return text, w, [g.standard_normal((c, 11, 9)).astype(np.float32)], ["out0"]


def _net_quantize_after_int8():
    # an int8 convolution's fp32 top (channels-last in the plan), quantized per channel into
    # another int8 convolution
    g = np.random.default_rng(23)
    c = 12
    conv0, w0 = _conv_int8(g, 16, c, 3)
    conv1, w1 = _conv_int8(g, c, 6, 1)
    text = f"""7767517
4 4
Input in0 0 1 in0
Convolution c0 1 1 in0 f0 {conv0}
Quantize qz 1 1 f0 q 0={c}
Convolution c1 1 1 q out0 {conv1}
"""
    w = w0 + [((0.2 + 0.3 * g.random(c)).astype(np.float32), 1)] + w1
    return text, w, [g.standard_normal((16, 10, 9)).astype(np.float32)], ["out0"]


CHANNEL_NETS = {
    "dequantize-1d": lambda: _net_dequantize(1),
    "dequantize-2d": lambda: _net_dequantize(2),
    "dequantize-3d": lambda: _net_dequantize(3),
    "requantize-conv": lambda: _net_requantize_conv(""),
    "requantize-leaky-conv": lambda: _net_requantize_conv("3=2 -23304=1,0.1"),
    "requantize-clip-innerproduct": _net_requantize_innerproduct,
    "quantize-per-channel": lambda: _net_quantize_per_channel("1=3 2=1 3=1"),
    "quantize-per-channel-strided": lambda: _net_quantize_per_channel("1=2 2=2"),
    "quantize-per-channel-channels-last": _net_quantize_after_int8,
}


def _run_text(text: str, blob: bytes, inputs, outputs, native: bool, threads: int = 1):
    net = ncnn_c.Net()
    net.opt.use_int8_inference = True
    net.opt.num_threads = threads
    net.native_plan = native
    assert net.load_param_mem(text) == 0 and net.load_model_mem(blob) == 0
    got = []
    for _ in range(2 if native else 1):  # native: recorded (numpy, checked), then the plan
        with net.create_extractor() as ex:
            for i, x in enumerate(inputs):
                assert ex.input(f"in{i}", ncnn_c.Mat(x)) == 0
            got = []
            for n in outputs:
                ret, m = ex.extract(n)
                assert ret == 0, n
                got.append(np.array(m.numpy(), copy=True))
    return net, got


@pytest.mark.parametrize("name", list(CHANNEL_NETS))
def test_per_channel_int8_layers_run_natively(name):
    from oracle import make_bin, oracle_outputs

    text, weights_, inputs, outputs = CHANNEL_NETS[name]()
    blob = make_bin(weights_)
    _, ref = _run_text(text, blob, inputs, outputs, native=False)
    for threads in (1, 2):
        net, got = _run_text(text, blob, inputs, outputs, native=True, threads=threads)
        plan = _only_plan(net)
        numpy_layers = [net._view.layers[s.layer].type for s in plan.segments if s.layer >= 0]
        assert not numpy_layers and len(plan.segments) == 1, numpy_layers
        for a, r, n in zip(got, ref, outputs, strict=True):
            assert np.std(r) > 0, f"{n}: a dead signal proves nothing"
            assert np.array_equal(a.view(np.uint32), r.view(np.uint32)), (
                f"{n}: {np.sum(a != r)} values differ"
            )
    ret, oracle = oracle_outputs(text, blob, inputs, len(outputs))
    assert ret == 0
    for a, r, n in zip(got, oracle, outputs, strict=True):
        assert rel_l2(a, r) <= 1e-5, f"{n}: {rel_l2(a, r):.3g} from the PyPI ncnn"
