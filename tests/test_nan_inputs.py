"""NaN and inf inputs (issue 28): every executor (the numpy layers, the native plan after it
was recorded on a finite input, Vulkan) follows one rule, and that rule gives what the PyPI
ncnn (CPU, fp32) gives wherever ncnn's answer does not depend on its code path.

What ncnn does, probed layer by layer (light mode off) on AVX-512 and, under
``qemu-x86_64 -cpu Haswell``, on its AVX2 bodies:

* ReLU keeps a NaN on every path (``max_ps(0, x)`` returns its second operand, the scalar
  tail ``std::max(x, 0)`` its first), as does its fused ReLU where a Convolution applies it
  through a ReLU layer (the GEMM, Winograd and 1x1 paths every network here takes); -inf goes
  to 0.
* max pooling's result for a window holding a NaN depends on the kernel: the generic loops
  fold ``max_ps(acc, v)`` (a NaN tap resets the fold, so only a NaN last tap survives), the 3x3
  and 2x2 stride-2 kernels of each packing take the taps in other orders. A window of only NaN
  gives NaN and one without NaN its maximum on every path: those are the cells compared here.
  ncnn_c's rule: a NaN anywhere in the window gives NaN.
* Softmax: ncnn's vector exp clamps its argument with ``min_ps(x, 88.376..)``, which takes the
  bound for a NaN, so a NaN (or +inf - +inf) input counts as exp(88.376) = 2.4e38: one such
  value takes all of the probability, two or more overflow the sum and every output is 0 (its
  scalar tail gives NaN instead: line lengths here are multiples of 16, all in vector lanes).
  That is why SqueezeNet's all-NaN image gives 1000 zeros in ncnn: every blob is NaN up to the
  global average pooling, and the Softmax turns 1000 NaNs into zeros.

An all-inf image is all NaN after the first convolution (weights of both signs), so it ends
the same way.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from oracle import FP32_FLAGS, _apply, backends, check, run_ncnn

import ncnn_c
from ncnn_c.net.native.plan import NativePlan

ROOT = pathlib.Path(__file__).resolve().parents[1]
SQUEEZENET = ROOT / "models" / "squeezenet_v1.1.param"
NAN, INF = np.float32(np.nan), np.float32(np.inf)


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("NCNN_C_NATIVE_STRICT", "1")


def _squeezenet(executor: str) -> ncnn_c.Net:
    net = ncnn_c.Net()
    _apply(net.opt, FP32_FLAGS)
    net.opt.use_vulkan_compute = executor == "vulkan"
    assert net.load_param(str(SQUEEZENET)) == 0
    assert net.load_model(str(SQUEEZENET.with_suffix(".bin"))) == 0
    if executor == "numpy":
        net.native_plan = False
    if executor == "vulkan":
        assert all(layer.vkdev is not None for layer in net.layers()), "a layer did not get the GPU"
    return net


def _extract(net: ncnn_c.Net, x: np.ndarray, out: str = "prob", name: str = "data") -> np.ndarray:
    with net.create_extractor() as ex:
        assert ex.input(name, ncnn_c.Mat(np.ascontiguousarray(x, np.float32))) == 0
        ret, m = ex.extract(out)
        assert ret == 0
        return np.array(m.numpy(), dtype=np.float32, copy=True)


class PlanRuns:
    """Counts the native plan's runs (recording's check included)."""

    def __init__(self, monkeypatch) -> None:
        self.count = 0
        run = NativePlan.run

        def counted(plan, *args, **kwargs):
            self.count += 1
            return run(plan, *args, **kwargs)

        monkeypatch.setattr(NativePlan, "run", counted)


def _on_plan(net: ncnn_c.Net, x: np.ndarray, finite: np.ndarray, runs: PlanRuns, **kw) -> np.ndarray:
    """``x`` through the net's native plan, recorded (and checked) on ``finite`` first."""
    _extract(net, finite, **kw)
    before = runs.count
    assert before >= 1, "no plan was recorded"
    got = _extract(net, x, **kw)
    assert runs.count == before + 1, "the non-finite input did not run on the plan"
    return got


IMAGES = {
    "nan": np.full((3, 227, 227), NAN, np.float32),
    "inf": np.full((3, 227, 227), INF, np.float32),
    "-inf": np.full((3, 227, 227), -INF, np.float32),
}
EXECUTORS = ["numpy", "plan", pytest.param("vulkan", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("image", list(IMAGES))
@pytest.mark.parametrize("executor", EXECUTORS)
def test_squeezenet_nonfinite_image(executor, image, monkeypatch):
    x = IMAGES[image]
    text = SQUEEZENET.read_text()
    ret, ref = run_ncnn(text, SQUEEZENET.with_suffix(".bin").read_bytes(), [x], 1, ["data"], ["prob"])
    assert ret == 0
    ref = ref[0].ravel()
    # ncnn: 1000 NaNs into its Softmax, 1000 zeros out (the module docstring)
    assert np.isfinite(ref).all() and not ref.any()
    net = _squeezenet(executor)
    if executor == "plan":
        finite = np.random.default_rng(0).uniform(0, 255, x.shape).astype(np.float32)
        got = _on_plan(net, x, finite, PlanRuns(monkeypatch))
    else:
        got = _extract(net, x)
    got = got.ravel()
    assert not np.isnan(got).any(), f"{executor}: {np.isnan(got).sum()} NaNs in prob"
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6, err_msg=executor)
    assert int(np.argmax(got)) == int(np.argmax(ref))


# -- one layer on every backend, against ncnn ---------------------------------------------------
def _sprinkle(shape, seed: int, values=(NAN, INF, -INF), frac: float = 0.2) -> np.ndarray:
    g = np.random.default_rng(seed)
    x = (g.standard_normal(shape) * 3).astype(np.float32)
    hit = g.random(shape) < frac
    x[hit] = g.choice(np.array(values, np.float32), int(hit.sum()))
    return x


@pytest.mark.parametrize("params", [{}, {0: 0.1}], ids=["relu", "leaky"])
@pytest.mark.parametrize("shape", [(7,), (33,), (16, 5, 7), (3, 9, 11)], ids=str)
@pytest.mark.parametrize("backend", backends("ReLU", grid=["fp32", "fp32-pack"]))
def test_relu_nonfinite(params, shape, backend):
    # NaN stays NaN, -inf goes to 0 (or -inf with a slope), inf stays, on every path of ncnn
    check(backend, "ReLU", params, [], [_sprinkle(shape, 1)], tol=0.0, paths=("layer", "inplace", "net"))


@pytest.mark.parametrize("activation", [1, 2], ids=["relu", "leaky"])
@pytest.mark.parametrize("backend", backends("Convolution", grid=["fp32", "fp32-pack"]))
def test_convolution_fused_relu_nonfinite(activation, backend):
    # a 1x1 convolution is ncnn's GEMM path, which applies the activation through its ReLU
    # layer (its small-convolution kernel takes max_ps(x, 0) and drops the NaN). A 3x3 one
    # would be its Winograd path, which spreads a NaN or inf over the whole output tile of
    # the input tile holding it: which cells turn NaN then depends on the tiling
    g = np.random.default_rng(2)
    c, oc = 8, 24
    x = _sprinkle((c, 9, 10), 3, frac=0.05)
    w = g.standard_normal(oc * c).astype(np.float32)
    b = g.standard_normal(oc).astype(np.float32)
    params = {0: oc, 1: 1, 5: 1, 6: w.size, 9: activation}
    if activation == 2:
        params[10] = [0.25]
    check(backend, "Convolution", params, [w, (b, 1)], [x], tol=1e-5)


def _blocks(shape, k: int, seed: int) -> np.ndarray:
    """Finite values with +-inf cells, and NaN in whole aligned k x k blocks: every k x k
    stride-k window holds only NaN or no NaN at all."""
    c, h, w = shape
    g = np.random.default_rng(seed)
    x = _sprinkle(shape, seed, values=(INF, -INF), frac=0.15)
    nan = np.zeros(shape, bool)
    blocks = g.random((c, h // k, w // k)) < 0.3
    nan[:, : h // k * k, : w // k * k] = np.kron(blocks, np.ones((k, k), bool))
    x[nan] = NAN
    return x


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("shape", [(1, 6, 12), (16, 6, 6), (24, 12, 18)], ids=str)
@pytest.mark.parametrize("backend", backends("Pooling", grid=["fp32", "fp32-pack"]))
def test_max_pooling_nonfinite(k, shape, backend):
    check(backend, "Pooling", {0: 0, 1: k, 2: k}, [], [_blocks(shape, k, 4)], tol=0.0)


@pytest.mark.parametrize("shape", [(16, 5, 7), (3, 4, 4)], ids=str)
@pytest.mark.parametrize("backend", backends("Pooling", grid=["fp32", "fp32-pack"]))
def test_global_max_pooling_nonfinite(shape, backend):
    x = _sprinkle(shape, 5, values=(INF, -INF), frac=0.1)
    x[0] = NAN  # a channel of NaN: NaN on every path; the others hold +-inf, no NaN
    check(backend, "Pooling", {0: 0, 4: 1}, [], [x], tol=0.0)


def _softmax_lines(n: int) -> list[tuple[str, np.ndarray]]:
    g = np.random.default_rng(n)
    cases = []
    for name, cells in [
        ("all nan", slice(None)),
        ("one nan", [n // 2 - 3]),
        ("two nan", [1, n - 5]),
        ("one inf", [n // 2]),
        ("nan and inf", [2, 5]),
        ("-inf", [3, n - 4]),
    ]:
        x = g.standard_normal(n).astype(np.float32)
        x[cells] = INF if "inf" in name and "nan" not in name else NAN
        if name == "nan and inf":
            x[5] = INF
        if name == "-inf":
            x[cells] = -INF
        cases.append((name, x))
    return cases


SOFTMAX = [(f"{n}-{name}", x) for n in (16, 32, 1000) for name, x in _softmax_lines(n)]


@pytest.mark.parametrize("case", SOFTMAX, ids=[c[0] for c in SOFTMAX])
@pytest.mark.parametrize("backend", backends("Softmax", grid=["fp32"]))
def test_softmax_nonfinite(case, backend):
    check(backend, "Softmax", {}, [], [case[1]], tol=1e-5, paths=("layer", "inplace", "net"))


# -- the rule where ncnn's answer depends on its kernel ------------------------------------------
def _max_pool_rule(x: np.ndarray, k: int, s: int) -> np.ndarray:
    """Max pooling with ncnn's full padding (-FLT_MAX) where a NaN in a window gives NaN."""
    c, h, w = x.shape
    oh, ow = -(-(h - k) // s) + 1, -(-(w - k) // s) + 1
    xp = np.full((c, (oh - 1) * s + k, (ow - 1) * s + k), -np.finfo(np.float32).max, np.float32)
    xp[:, :h, :w] = x
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::s, ::s]
    return win.max(axis=(3, 4))  # numpy's max propagates NaN


def _layer_net(lines: list[str], shape) -> tuple[str, bytes]:
    """A param text (Input "data" of ``shape``, then ``lines``) and random weights for it."""
    import tempfile

    from ncnn_c.tools.randbin import random_weights

    c, h, w = shape
    body = [f"Input in 0 1 data 0={w} 1={h} 2={c}", *lines]
    blobs = set()
    for line in body:
        tok = line.split()
        nb, nt = int(tok[2]), int(tok[3])
        blobs.update(tok[4 : 4 + nb + nt])
    text = "\n".join(["7767517", f"{len(body)} {len(blobs)}", *body]) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "m.param"
        path.write_text(text)
        return text, random_weights(str(path), seed=7, input_shape=shape)


def _net(text: str, weights: bytes, executor: str) -> ncnn_c.Net:
    net = ncnn_c.Net()
    _apply(net.opt, FP32_FLAGS)
    net.opt.use_vulkan_compute = executor == "vulkan"
    assert net.load_param_mem(text) == 0 and net.load_model_mem(weights) == 0
    if executor == "numpy":
        net.native_plan = False
    return net


def _run(text: str, weights: bytes, executor: str, x: np.ndarray, monkeypatch) -> np.ndarray:
    net = _net(text, weights, executor)
    if executor == "plan":
        finite = np.random.default_rng(9).standard_normal(x.shape).astype(np.float32)
        return _on_plan(net, x, finite, PlanRuns(monkeypatch), out="out")
    return _extract(net, x, out="out")


@pytest.mark.parametrize("k, s", [(3, 2), (2, 2), (3, 1)])
@pytest.mark.parametrize("cout", [16, 24, 5])
@pytest.mark.parametrize("executor", EXECUTORS)
def test_max_pooling_nan_rule(executor, cout, k, s, monkeypatch):
    # a 1x1 convolution in front (weights of one sign per output: no inf - inf), so that the
    # pooling reads the layouts the plan and the GPU give a convolution's output
    shape = (3, 11, 14)
    text, weights = _layer_net(
        [
            f"Convolution c 1 1 data a 0={cout} 1=1 5=1 6={3 * cout}",
            f"Pooling p 1 1 a out 0=0 1={k} 2={s}",
        ],
        shape,
    )
    x = _sprinkle(shape, 6, frac=0.08)
    got = _run(text, weights, executor, x, monkeypatch)
    # the convolution alone on the same executor: the GPU's sums may round otherwise
    conv = _run(text.replace("Pooling p 1 1 a out", "Noop p 1 1 a out"), weights, executor, x, monkeypatch)
    want = _max_pool_rule(conv, k, s)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{executor}: NaN cells")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=executor)


PLAN_NETS = {
    "conv 3x3 relu": ["Convolution c 1 1 data out 0=16 1=3 4=1 5=1 6=432 9=1"],
    "conv 1x1 relu": ["Convolution c 1 1 data out 0=24 1=1 5=1 6=72 9=1"],
    "conv relu layer": ["Convolution c 1 1 data a 0=16 1=1 5=1 6=48", "ReLU r 1 1 a out"],
    "conv 3x3 leaky": ["Convolution c 1 1 data out 0=16 1=3 4=1 5=1 6=432 9=2 -23310=1,0.1"],
    "global max": ["Convolution c 1 1 data a 0=16 1=1 5=1 6=48", "Pooling p 1 1 a out 0=0 4=1"],
    "global avg": ["Convolution c 1 1 data a 0=16 1=1 5=1 6=48", "Pooling p 1 1 a out 0=1 4=1"],
    "softmax": [
        "Convolution c 1 1 data a 0=16 1=1 5=1 6=48",
        "Pooling p 1 1 a b 0=1 4=1",
        "Softmax s 1 1 b out",
    ],
    "channel softmax": ["Convolution c 1 1 data a 0=16 1=1 5=1 6=48", "Softmax s 1 1 a out 0=0"],
}


# a Winograd 3x3 convolution (the plan's, where it picks one) spreads a NaN over its tile: with
# a few NaNs the cells depend on the tiling (see test_convolution_fused_relu_nonfinite)
AGREE = [(n, i) for n in PLAN_NETS for i in ("sprinkled", "nan", "inf") if i != "sprinkled" or "3x3" not in n]


@pytest.mark.parametrize("name, image", AGREE, ids=[f"{n}-{i}" for n, i in AGREE])
@pytest.mark.parametrize("executor", ["plan", pytest.param("vulkan", marks=pytest.mark.gpu)])
def test_executors_agree_on_nonfinite(executor, name, image, monkeypatch):
    # the plan (recorded on a finite input) and the GPU give the numpy layers' non-finite cells
    shape = (3, 10, 12)
    text, weights = _layer_net(PLAN_NETS[name], shape)
    x = {"sprinkled": _sprinkle(shape, 8, frac=0.05), "nan": np.full(shape, NAN), "inf": np.full(shape, INF)}
    x = x[image].astype(np.float32)
    want = _run(text, weights, "numpy", x, monkeypatch)
    got = _run(text, weights, executor, x, monkeypatch)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{executor}: NaN cells")
    np.testing.assert_array_equal(np.isinf(got) * np.sign(got), np.isinf(want) * np.sign(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-4, atol=1e-6, err_msg=executor)


# the plan's non-finite steps read every layout some machine's convolutions write (nhwc on
# AVX-512, channel blocks of 8 on AVX2, ...): forced here as tests/test_native_ops.py does
LAYOUT_NETS = {
    "max pool": ["Pooling p 1 1 a out 0=0 1=3 2=2"],
    "max pool s1 pad": ["Pooling p 1 1 a out 0=0 1=3 2=1 3=1"],
    "relu": ["ReLU r 1 1 a out"],
    "softmax c": ["Softmax s 1 1 a out 0=0"],
    "softmax h": ["Softmax s 1 1 a out 0=1 1=1"],
    "softmax w": ["Softmax s 1 1 a out 0=2 1=1"],
}


@pytest.fixture(params=["aBcd16b", "aBcd8b", "acdb", "abcd"])
def layout(request, monkeypatch):
    from ncnn_c._native import dnnl

    dn, tag = dnnl.get(), request.param
    make = dn.convolution

    def convolution(src, weights, bias, dst, *args):
        return make(src, weights, bias, dn.md(dst.dims, tag), *args)

    monkeypatch.setattr(dn, "convolution", convolution)
    return tag


@pytest.mark.parametrize("image", ["sprinkled", "nan"])
@pytest.mark.parametrize("name", list(LAYOUT_NETS))
def test_plan_steps_in_every_layout(layout, name, image, monkeypatch):
    shape = (3, 9, 11)
    lines = ["Convolution c 1 1 data a 0=24 1=1 5=1 6=72", *LAYOUT_NETS[name]]  # 24: padded blocks
    text, weights = _layer_net(lines, shape)
    x = _sprinkle(shape, 10, frac=0.06) if image == "sprinkled" else np.full(shape, NAN, np.float32)
    want = _run(text, weights, "numpy", x, monkeypatch)
    got = _run(text, weights, "plan", x, monkeypatch)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{layout}: NaN cells")
    np.testing.assert_array_equal(np.isinf(got) * np.sign(got), np.isinf(want) * np.sign(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-4, atol=1e-6, err_msg=layout)
