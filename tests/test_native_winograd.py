"""The native plan's Winograd convolutions (ncnn_c/net/native/ops/winograd.py, _native/winograd.c).

Each case is a small network: an Input, a 1x1 convolution in front (so that the layer sees
the layout the plan gives it, not the plain input Mat) and the 3x3 stride-1 convolution
under test, forced into F(6,3) or F(4,3) (``NCNN_C_WINOGRAD``), whole or in chunks of tiles
(``NCNN_C_WINOGRAD_CHUNK``), on every layout its transforms read: the one oneDNN picks here,
nChw16c, nChw8c and nhwc with 16 and 8 channels per vector. ``test_native_ops.check`` runs
it twice (the numpy layers, then the plan) and compares the plan with the numpy layers
(rel L2 1e-5) and with the PyPI ncnn (1e-4); strict mode makes a plan that misses the numpy
result fail instead of falling back.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest
import test_networks as tn
from oracle import FP32_FLAGS, rel_l2, run_ncnn, run_ncnn_isolated
from test_native_ops import _in, _param, check, conv

import ncnn_c
from ncnn_c._native import dnnl
from ncnn_c.net.native.ops import winograd
from ncnn_c.tools.randbin import random_weights

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="no oneDNN wheel for this architecture"
)


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("NCNN_C_NATIVE_STRICT", "1")
    assert winograd.kernels() is not None, "the _winograd extension is not built"


@pytest.fixture(params=[None, "aBcd16b", "aBcd8b", "acdb", "acdb-8"])
def layout(request, monkeypatch):
    """Every convolution reads and writes this layout (None: oneDNN's choice here; "acdb-8":
    nhwc with the 8-channel vectors of a CPU without AVX-512)."""
    tag = request.param
    if tag == "acdb-8":
        tag = "acdb"
        monkeypatch.setattr(winograd, "nhwc_lanes", lambda: 8)
    if tag is not None:
        dn = dnnl.get()
        make = dn.convolution

        def convolution(src, weights, bias, dst, *args, **kw):
            if len(weights.dims) == 5:  # grouped: oneDNN's kernels take the layout they take
                return make(src, weights, bias, dst, *args, **kw)
            return make(dn.md(src.dims, tag), weights, bias, dn.md(dst.dims, tag), *args, **kw)

        monkeypatch.setattr(dn, "convolution", convolution)
    return tag


def conv3(name: str, bottom: str, top: str, cin: int, cout: int, params: str) -> str:
    return f"Convolution {name} 1 1 {bottom} {top} 0={cout} 1=3 6={cout * cin * 9} {params}"


# (cin, cout, h, w, the layer's params): channel counts around the vector widths, odd and
# tiny planes, every padding form, bias or not, each fused activation
CASES = [
    (16, 16, 12, 12, "4=1 5=1"),
    (24, 40, 17, 20, "4=1 5=1 9=1"),  # partial channel blocks, ReLU
    (40, 33, 13, 7, "4=1 5=0 9=2 -23310=1,0.1"),  # odd output channels, leaky ReLU, no bias
    (3, 20, 9, 11, "4=0 5=1 9=3 -23310=2,-0.5,0.75"),  # no padding, Clip, fewer channels than a vector
    (24, 32, 5, 5, "4=1 5=1 9=4"),  # Sigmoid: an eltwise primitive after the output transform
    (20, 32, 31, 29, "4=-233 5=1 9=5"),  # SAME padding, Mish
    (17, 48, 10, 14, "4=2 5=1"),  # padding 2: the output is larger than the input
    (16, 16, 1, 1, "4=1 5=1"),  # one pixel
    (16, 24, 11, 9, "4=0 14=2 15=1 16=0 5=1"),  # asymmetric padding
]
# (form, tiles per chunk; 0: all at once)
FORMS = [("63", 0), ("43", 0), ("23", 0), ("63", 3), ("43", 5), ("23", 4)]


@pytest.mark.parametrize("form, chunk", FORMS)
@pytest.mark.parametrize("cin, cout, h, w, params", CASES)
def test_winograd_convolution(tmp_path, monkeypatch, layout, form, chunk, cin, cout, h, w, params):
    monkeypatch.setenv("NCNN_C_WINOGRAD", form)
    monkeypatch.setenv("NCNN_C_WINOGRAD_CHUNK", str(chunk))
    lines = [_in(cin, h, w), conv("c", "data", "a", cin, cin), conv3("w", "a", "out", cin, cout, params)]
    plan = check(tmp_path, lines, {"data": (cin, h, w)}, ["out"])
    # oneDNN reads 3 channels in the plain layout, which the transforms do not take
    plain = layout is None and cin == 3
    assert winograd.forms(plan)["w"] == ("direct" if plain else f"winograd{form}")


def test_baseline_kernels():
    # the builds for CPUs without AVX-512 / AVX2 (and for aarch64) run here only when the
    # environment asks, before the extension's first call: a child pytest over the cases
    if os.environ.get("NCNN_C_WINOGRAD_BASELINE") == "1":
        pytest.skip("this run is the child")
    env = dict(os.environ, NCNN_C_WINOGRAD_BASELINE="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", __file__]
    cmd += ["-k", "test_winograd_convolution and (63-0 or 43-5 or 23-4)"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "\n135 passed" in r.stdout, r.stdout[-500:]


@pytest.mark.parametrize("form", ["63", "43", "23"])
def test_folded_layers_and_activations_after_it(tmp_path, monkeypatch, form):
    # BatchNorm folded into the weights and bias, ReLU fused into the output transform;
    # Swish after the second one runs as an eltwise primitive
    monkeypatch.setenv("NCNN_C_WINOGRAD", form)
    c = 24
    lines = [
        _in(c, 14, 15),
        conv3("w1", "data", "a", c, 32, "4=1 5=1"),
        "BatchNorm bn 1 1 a b 0=32",
        "ReLU r 1 1 b c",
        conv3("w2", "c", "d", 32, 20, "4=1 5=0"),
        "Swish s 1 1 d out",
    ]
    plan = check(tmp_path, lines, {"data": (c, 14, 15)}, ["out"])
    assert winograd.forms(plan) == {"w1": f"winograd{form}", "w2": f"winograd{form}"}


def test_a_residual_add_after_it_keeps_the_direct_kernel(tmp_path, monkeypatch):
    # the add is a post-op of oneDNN's convolution; the Winograd steps have none
    monkeypatch.setenv("NCNN_C_WINOGRAD", "63")
    lines = [
        _in(16, 12, 12),
        conv("c", "data", "a", 16, 16),
        "Split sp 1 2 a a0 a1",
        conv3("w", "a0", "b", 16, 16, "4=1 5=1"),
        "BinaryOp add 2 1 b a1 out 0=0",
    ]
    plan = check(tmp_path, lines, {"data": (16, 12, 12)}, ["out"])
    assert winograd.forms(plan)["w"] == "direct"


@pytest.mark.parametrize("threads", [2, 3])
def test_threads(tmp_path, monkeypatch, threads):
    monkeypatch.setenv("NCNN_C_WINOGRAD_CHUNK", "7")
    lines = [_in(32, 30, 26), conv("c", "data", "a", 32, 32), conv3("w", "a", "out", 32, 48, "4=1 5=1 9=1")]
    plan = check(tmp_path, lines, {"data": (32, 30, 26)}, ["out"], threads=threads)
    assert winograd.forms(plan)["w"].startswith("winograd")


@pytest.mark.parametrize(
    "form, chunk, group", [("63", 3, 16), ("43", 0, 16), ("63", 5, 32), ("43", 7, 0), ("23", 9, 16)]
)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_items_of_tiles_and_channel_groups(tmp_path, monkeypatch, form, chunk, group, threads):
    # the layer's work as items (a chunk of tiles, a group of output channels) on more or
    # fewer threads than items: 40 output channels are 3 groups of 16 (the last one padded)
    monkeypatch.setenv("NCNN_C_WINOGRAD", form)
    monkeypatch.setenv("NCNN_C_WINOGRAD_CHUNK", str(chunk))
    monkeypatch.setenv("NCNN_C_WINOGRAD_GROUP", str(group))
    lines = [_in(24, 19, 17), conv("c", "data", "a", 24, 24), conv3("w", "a", "out", 24, 40, "4=1 5=1 9=1")]
    plan = check(tmp_path, lines, {"data": (24, 19, 17)}, ["out"], threads=threads)
    assert winograd.forms(plan)["w"] == f"winograd{form}"


def _plan_output(tmp_path, lines: list[str], shape: tuple, threads: int) -> np.ndarray:
    """The second extract of ``out`` (the plan's) on ``threads`` threads."""
    text = _param(lines)
    path = tmp_path / "m.param"
    path.write_text(text)
    net = ncnn_c.Net()
    net.opt.num_threads = threads
    assert net.load_param_mem(text) == 0
    assert net.load_model_mem(random_weights(str(path), seed=7, input_shape=shape)) == 0
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    for _ in range(2):
        with net.create_extractor() as ex:
            assert ex.input("data", ncnn_c.Mat(x)) == 0
            out = np.array(ex.extract("out")[1].numpy(), copy=True)
    return out


def test_any_thread_count_gives_the_same_bits(tmp_path, monkeypatch):
    # each output element is computed by one item, in the same order whoever runs it
    monkeypatch.setenv("NCNN_C_WINOGRAD", "63")
    monkeypatch.setenv("NCNN_C_WINOGRAD_CHUNK", "4")
    monkeypatch.setenv("NCNN_C_WINOGRAD_GROUP", "16")
    lines = [_in(32, 23, 21), conv3("w", "data", "out", 32, 48, "4=1 5=1 9=1")]
    outs = [_plan_output(tmp_path, lines, (32, 23, 21), t) for t in (1, 2, 3)]
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])


@pytest.mark.parametrize(
    "tiles, kp, np_, n, threads, want",
    [
        (1444, 64, 64, 8, 2, (61, 64)),  # VGG16's 224x224x64 layer: chunks of tiles
        (16, 512, 512, 6, 2, (16, 64)),  # its 14x14 layers: all 16 tiles, groups of channels
        (16, 512, 512, 6, 16, (16, 32)),  # more threads, narrower groups
    ],
)
def test_the_split(tiles, kp, np_, n, threads, want, monkeypatch):
    monkeypatch.delenv("NCNN_C_WINOGRAD_CHUNK", raising=False)
    monkeypatch.delenv("NCNN_C_WINOGRAD_GROUP", raising=False)
    tc, ng = winograd.split(tiles, kp, np_, n, 16, threads)
    assert (tc, ng) == want
    assert n * n * tc * (kp + ng) * 4 <= winograd.CHUNK_BYTES and tc * ng <= winograd.M_FLOATS


def test_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("NCNN_C_WINOGRAD", "0")
    lines = [_in(32, 30, 26), conv3("w", "data", "out", 32, 48, "4=1 5=1")]
    plan = check(tmp_path, lines, {"data": (32, 30, 26)}, ["out"])
    assert winograd.forms(plan) == {"w": "direct"}


@pytest.mark.parametrize(
    "c, oc, h, w, want",
    [
        (64, 64, 224, 224, 6),  # VGG16's first stage: many tiles, F(6,3) has fewer of them
        (128, 128, 56, 56, 6),
        (256, 256, 56, 56, 4),  # F(6,3)'s 16.8 MB of weights are streamed (STREAM_READ), F(4,3)'s 9.4 not
        (256, 256, 28, 28, 4),  # 3x3 tiles of 6 would cover 30x30
        (512, 512, 28, 28, 4),  # 37.7 MB of transformed weights, but 49 tiles to share them
        (512, 512, 14, 14, 2),  # F(4,3)'s weights streamed for 16 tiles; F(2,3)'s, 1.8x the kernel, for 49
        (256, 256, 14, 14, 2),
        (256, 384, 13, 13, 2),
        (512, 512, 7, 7, 0),  # 4 tiles: the transformed weights cost more than they save
        (3, 64, 224, 224, 0),  # the transforms of 3 channels cost more than the products
        (256, 16, 37, 37, 0),  # few output channels
        (768, 126, 9, 9, 2),
        (384, 256, 26, 26, 4),  # 49 tiles share F(4,3)'s weights
    ],
)
def test_the_rule(c, oc, h, w, want):
    assert winograd.choose(c, oc, h, w, 16) == want


def test_transformed_weights_reproduce_a_correlation():
    # the kernel's U = G g G^T with the B^T / A^T of winograd_kernels.h, on one tile in float64
    bt6 = np.array(
        [
            [1, 0, -21 / 4, 0, 21 / 4, 0, -1, 0],
            [0, 1, 1, -17 / 4, -17 / 4, 1, 1, 0],
            [0, -1, 1, 17 / 4, -17 / 4, -1, 1, 0],
            [0, 1 / 2, 1 / 4, -5 / 2, -5 / 4, 2, 1, 0],
            [0, -1 / 2, 1 / 4, 5 / 2, -5 / 4, -2, 1, 0],
            [0, 2, 4, -5 / 2, -5, 1 / 2, 1, 0],
            [0, -2, 4, 5 / 2, -5, -1 / 2, 1, 0],
            [0, -1, 0, 21 / 4, 0, -21 / 4, 0, 1],
        ]
    )
    at6 = np.array(
        [
            [1, 1, 1, 1, 1, 32, 32, 0],
            [0, 1, -1, 2, -2, 16, -16, 0],
            [0, 1, 1, 4, 4, 8, 8, 0],
            [0, 1, -1, 8, -8, 4, -4, 0],
            [0, 1, 1, 16, 16, 2, 2, 0],
            [0, 1, -1, 32, -32, 1, -1, 1],
        ]
    )
    bt4 = np.array(
        [
            [4, 0, -5, 0, 1, 0],
            [0, -4, -4, 1, 1, 0],
            [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0],
            [0, 2, -1, -2, 1, 0],
            [0, 4, 0, -5, 0, 1],
        ]
    )
    at4 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]])
    bt2 = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, -1, 0, 1]])
    at2 = np.array([[1, 1, 1, 0], [0, 1, -1, 1]])
    g = np.random.default_rng(1)
    for m, bt, at in ((6, bt6, at6), (4, bt4, at4), (2, bt2, at2)):
        n = m + 2
        k = g.standard_normal((1, 1, 3, 3))
        d = g.standard_normal((n, n))
        u = winograd.transform_weights(k, m).astype(np.float64).reshape(n, n)
        y = at @ (u * (bt @ d @ bt.T)) @ at.T
        want = np.array([[np.sum(d[i : i + 3, j : j + 3] * k[0, 0]) for j in range(m)] for i in range(m)])
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "model",
    [
        "yolov4-tiny",
        *(pytest.param(m, marks=pytest.mark.slow) for m in ("resnet50", "squeezenet_ssd", "vgg16")),
    ],
)
def test_networks_through_the_plan(model):
    # test_networks compares the first extract (the numpy layers that record the plan); here
    # the second, the plan with its Winograd layers, meets the same bars against the PyPI ncnn
    param = tn.BENCH / f"{model}.param"
    wts = tn.weights(str(param), False)
    inputs, outputs = tn.parse_param(param)
    g = np.random.default_rng(0)
    arrays = [g.standard_normal(shape).astype(np.float32) for _, shape in inputs]
    text = param.read_text()
    names = [n for n, _ in outputs]
    oracle = run_ncnn_isolated if "DetectionOutput" in text else run_ncnn
    ret, ref = oracle(text, wts, arrays, len(names), [n for n, _ in inputs], names)
    assert ret == 0
    net = ncnn_c.Net()
    for key, value in FP32_FLAGS.items():
        setattr(net.opt, key, value)
    assert net.load_param_mem(text) == 0 and net.load_model_mem(wts) == 0
    for _ in range(2):
        with net.create_extractor() as ex:
            for (name, _), a in zip(inputs, arrays, strict=True):
                assert ex.input(name, ncnn_c.Mat(a)) == 0
            got = [np.array(ex.extract(n)[1].numpy(), copy=True) for n in names]
    (plan,) = [p for ps in net._native.plans._plans.values() for p in ps]
    assert "winograd63" in winograd.forms(plan).values() or "winograd43" in winograd.forms(plan).values()
    for (name, typ), g_out, r_out in zip(outputs, got, ref, strict=True):
        if typ in tn.DETECTION_TYPES:
            tn.assert_same_detections(g_out, r_out, name, tn.detection_thresholds(text), 1e-4)
            continue
        assert rel_l2(g_out, r_out.reshape(g_out.shape)) <= tn.NET_TOL
        if r_out.ndim == 1 and r_out.size >= 10:
            assert int(np.argmax(g_out)) == int(np.argmax(r_out))
