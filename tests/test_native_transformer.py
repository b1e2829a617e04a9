"""The transformer decoders' layers in the native CPU plan (ncnn_c/net/native/ops/transformer.py):
Gemm with constant weights, RMSNorm, RotaryEmbed and the grouped-query head repeat
(ExpandDims -> Tile -> Reshape), each in a small network that must run wholly natively and
agree with the numpy layers and the PyPI ncnn (test_native_ops.check); and the shape-loose
plans that keep a decoder's steps native while its kv cache grows."""

from __future__ import annotations

import platform

import numpy as np
import pytest
from conftest import MODELS
from test_native_ops import check

import ncnn_c
from ncnn_c.layer.gemm import panels16, unpanels16
from ncnn_c.tools.bench import LLMSpec, llm_inputs, llm_step, load_llm
from ncnn_c.tools.randbin import random_weights

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="no oneDNN wheel for this architecture"
)


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("NCNN_C_NATIVE_STRICT", "1")


def _input(name: str) -> str:
    return f"Input {name} 0 1 {name}"


@pytest.mark.parametrize(
    "shape, params",
    [
        ((5, 48), "7=0 8=40 9=48 10=-1"),  # M=5 rows, no C
        ((1, 48), "7=1 8=40 9=48 10=-1"),  # a decode step's one row
        ((48,), "8=24 9=48 10=-1"),  # a 1-D A
        ((3, 1, 48), "8=24 9=48 10=-1"),  # (c, 1, w): a row per channel
        ((4, 48), "8=40 9=48 10=4"),  # a per-N constant C as the bias
        ((4, 48), "0=0.5 1=2.0 8=40 9=48 10=4"),  # alpha and beta
        ((1, 37), "0=0.5 1=2.0 8=21 9=37 10=4"),  # the same in the GEMV, odd sizes
    ],
)
def test_gemm_constant_weights(tmp_path, shape, params):
    lines = [_input("data"), f"Gemm g 1 1 data out 2=0 3=1 4=0 5=1 6=1 {params}"]
    check(tmp_path, lines, {"data": shape}, ["out"])


@pytest.mark.parametrize(
    "shape, params, fp16_rows",
    [
        ((1, 48), "7=1 8=40 9=48 10=-1", 1),  # a decode step's row
        ((1, 37), "0=0.5 1=2.0 8=21 9=37 10=4", 1),  # odd sizes (vector tails, a short block), bias, alpha
        ((3, 1, 48), "8=24 9=48 10=-1", 3),  # rows per channel
        ((4, 48), "8=40 9=48 10=4", 4),  # rows in chunks of 4
        ((23, 48), "7=0 8=40 9=48 10=-1", 23),  # 16 + 4 + 2 + 1
        ((65, 48), "7=0 8=40 9=48 10=-1", 0),  # more than GEMM16_ROWS: oneDNN's fp32 matmul
    ],
)
def test_gemm_fp16_stored_weights(tmp_path, monkeypatch, shape, params, fp16_rows):
    """Weights an fp16-stored .bin held (every value an fp16 one) run as the fp16 GEMM for up
    to GEMM16_ROWS rows: the same results as the numpy layers and the PyPI ncnn."""
    from ncnn_c.net.native.ops import transformer

    used = []
    real = transformer.gemm16
    monkeypatch.setattr(
        transformer,
        "gemm16",
        lambda plan, seg, src, out, m, *a: (used.append(m), real(plan, seg, src, out, m, *a)),
    )
    lines = [_input("data"), f"Gemm g 1 1 data out 2=0 3=1 4=0 5=1 6=1 {params}"]
    check(tmp_path, lines, {"data": shape}, ["out"], fp16_weights=True)
    assert used == ([fp16_rows] if fp16_rows else [])


@pytest.mark.parametrize("pass_in", ["numpy", "c"])
def test_gemm_fp16_copy_only_for_exact_weights(pass_in):
    """``Gemm.fp16_weights``: the fp16 copy when nothing is lost, else None; the numpy pass
    and the C one (what the native plan installs) alike."""
    from ncnn_c.net.native.ops import transformer

    convert = transformer._panels16 if pass_in == "c" else None
    text = "7767517\n2 2\nInput in 0 1 data\nGemm g 1 1 data out 2=0 3=1 4=0 5=1 6=1 8=3 9=4 10=-1\n"
    for values, exact in (([0.5, -2.0, 1024.0, 0.0] * 3, True), ([0.1] * 12, False), ([1e6] * 12, False)):
        net = ncnn_c.Net()
        assert net.load_param_mem(text) == 0
        weights = np.zeros(1, np.uint32).tobytes() + np.asarray(values, np.float32).tobytes()
        assert net.load_model_mem(weights) == 0
        layer = net.layers()[1]
        half = layer.fp16_weights(convert)
        if exact:
            assert half is not None and half.dtype == np.float16 and half.shape == (1, 64)
            rows = unpanels16(half, 3, 4)
            np.testing.assert_array_equal(rows.astype(np.float32), np.reshape(values, (3, 4)))
        else:
            assert half is None


@pytest.mark.parametrize("n, k", [(16, 32), (5, 37), (3, 4), (21, 16), (1, 100)])
def test_fp16_panels_round_trip(n, k):
    """panels16's layout: 16-row panels stored column by column; the same rows back from
    unpanels16, and the order the C kernel reads."""
    w = np.arange(n * k, dtype=np.float32).reshape(n, k).astype(np.float16)
    p = panels16(w)
    assert p.shape == (-(-n // 16), 16 * k)
    np.testing.assert_array_equal(unpanels16(p, n, k), w)
    rows = min(n, 16)
    np.testing.assert_array_equal(p[0, :rows], w[:rows, 0])  # column 0 of the first panel's rows
    np.testing.assert_array_equal(p[0, rows:16], 0)  # rows past N: zeros
    np.testing.assert_array_equal(p[0, 16 : 16 + rows], w[:rows, 1] if k > 1 else p[0, 16 : 16 + rows])


def test_fp16_panels_in_c_match_numpy():
    """``Gemm.fp16_weights``'s C pass (ncnnc_panels16) gives numpy's panels, and None for a
    matrix with one value that is not an fp16 one (a NaN, a value between two fp16 ones, a
    float below fp16's smallest subnormal)."""
    from ncnn_c.net.native.ops import transformer

    if not transformer._STEPS.loaded():
        pytest.fail("the _llm extension is not built")
    g = np.random.default_rng(1)
    for n, k in ((37, 53), (16, 16), (5, 3), (64, 1024)):
        w = g.standard_normal((n, k)).astype(np.float16)
        w.flat[::7] = np.float16(6e-8)  # subnormals
        w.flat[3] = np.float16(-0.0)
        w.flat[5] = np.float16(np.inf)
        got = transformer._panels16(w.astype(np.float32))
        assert got is not None
        np.testing.assert_array_equal(got.view(np.uint16), panels16(w).view(np.uint16))
        for bad in (np.nan, 0.1, 1e-9, 65520.0):
            x = w.astype(np.float32)
            x.flat[-1] = bad
            assert transformer._panels16(x) is None, bad


def test_half_to_float_conversion():
    """The plain fp16 conversion (CPUs without F16C, the vector loops' tails): every one of
    the 65536 values as numpy converts it, subnormals, infinities and NaNs included."""
    from ncnn_c.net.native.ops import transformer

    mod = transformer._STEPS
    if not mod.loaded():
        pytest.fail("the _llm extension is not built")
    bits = np.arange(1 << 16, dtype=np.uint16)
    ours = np.array([mod.call("ncnnc_half_to_float", int(b)) for b in bits], np.float32)
    ref = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(ref)
    assert (np.isnan(ours) == nan).all()
    np.testing.assert_array_equal(ours[~nan].view(np.uint32), ref[~nan].view(np.uint32))


def test_gemm_row_without_the_llm_extension(tmp_path, monkeypatch):
    """Without ``_llm`` a one-row Gemm is oneDNN's inner product over the plain weights."""
    from ncnn_c.net.native.ops import transformer

    monkeypatch.setattr(transformer, "kernels", lambda: None)
    lines = [_input("data"), "Gemm g 1 1 data out 0=0.5 1=2.0 2=0 3=1 4=0 5=1 6=1 7=1 8=21 9=37 10=4"]
    check(tmp_path, lines, {"data": (1, 37)}, ["out"])


def test_gemm_with_an_input_b_stays_numpy(tmp_path):
    lines = [_input("a"), _input("b"), "Gemm g 2 1 a b y 2=0 3=1", "ReLU r 1 1 y out"]
    check(tmp_path, lines, {"a": (4, 16), "b": (8, 16)}, ["out"], numpy_layers=1)


@pytest.mark.parametrize(
    "shape, params",
    [
        ((6, 32), "0=32 1=1e-6 2=1"),  # rows
        ((32,), "0=32 1=1e-3 2=1"),  # 1-D
        ((4, 3, 16), "0=16 1=1e-6 2=1"),  # each row of each channel (q/k norms per head)
        ((4, 3, 16), "0=48 1=1e-6 2=1"),  # each channel
        ((5, 24), "0=24 1=1e-6 2=0"),  # no gamma
    ],
)
def test_rmsnorm(tmp_path, shape, params):
    check(tmp_path, [_input("data"), f"RMSNorm r 1 1 data out {params}"], {"data": shape}, ["out"])


@pytest.mark.parametrize(
    "x, cache, interleaved",
    [
        ((4, 6, 16), (6, 8), 0),  # halves
        ((4, 6, 16), (6, 8), 1),  # neighbours
        ((6, 16), (9, 10), 0),  # one head; caches longer and wider than needed
        ((2, 1, 128), (1, 64), 0),  # a decode step
    ],
)
def test_rotaryembed(tmp_path, x, cache, interleaved):
    lines = [_input("x"), _input("cos"), _input("sin"), f"RotaryEmbed rope 3 1 x cos sin out 0={interleaved}"]
    check(tmp_path, lines, {"x": x, "cos": cache, "sin": cache}, ["out"])


@pytest.mark.parametrize("c, r", [(2, 3), (8, 2)])
def test_grouped_query_head_repeat(tmp_path, c, r):
    """ExpandDims, Tile and Reshape as LLM exports write the kv-head repeat: one native copy
    per repeat, no 4-D blob."""
    h, w = 5, 16
    lines = [
        _input("data"),
        "ExpandDims e 1 1 data x -23303=1,1",
        f"Tile t 1 1 x y -23302=4,1,{r},1,1",
        f"Reshape rs 1 1 y out 0={w} 1=-1 2={c * r}",
    ]
    check(tmp_path, lines, {"data": (c, h, w)}, ["out"])


def test_a_tile_read_twice_stays_numpy(tmp_path):
    """The repeat is fused only where the Reshape is the Tile's one reader."""
    lines = [
        _input("data"),
        "ExpandDims e 1 1 data x -23303=1,1",
        "Tile t 1 1 x y -23302=4,1,2,1,1",
        "Split s 1 2 y y0 y1",
        "Reshape rs 1 1 y0 out 0=16 1=-1 2=4",
        "Reshape rs2 1 1 y1 z 0=16 1=-1 2=4",
        "ReLU r 1 1 z out2",
    ]
    # ExpandDims, Tile, and what reads the 4-D blob (Split, both Reshapes): numpy
    check(tmp_path, lines, {"data": (2, 5, 16)}, ["out", "out2"], numpy_layers=5)


def test_decode_steps_share_one_shape_loose_plan(tmp_path):
    """A decoder's steps: the first decode steps record, then one plan whose kv cache and
    mask blobs are of varying shape (SDPA runs in numpy between its segments) runs every
    later step; its logits are the numpy layers'."""
    name = "qwen3_0.6b_2layer"
    param = tmp_path / f"{name}_decoder.ncnn.param"
    param.write_text((MODELS / "llm" / f"{name}_decoder.ncnn.param").read_text())
    weights = tmp_path / f"{name}_decoder.ncnn.bin"
    weights.write_bytes(random_weights(str(param), seed=0))
    spec = LLMSpec(str(param))
    results = []
    for native in (True, False):
        decoder, _ = load_llm(ncnn_c, str(param), str(weights), "cpu", 1)
        decoder.native_plan = native
        rng = np.random.default_rng(0)
        cache, past, outs = None, 0, []
        for step in range(8):
            cur = 4 if step == 0 else 1
            hidden, cache = llm_step(ncnn_c, decoder, None, spec, llm_inputs(spec, cur, past, rng), cache)
            outs.append(hidden)
            past += cur
            if native and step == 3:
                built = decoder._native.plans.built
        if native:
            plans = decoder._native.plans
            assert plans.built == built, "a decode step recorded a plan after the shape-loose one"
            loose = [p for k, ps in plans._plans.items() if k[-1] == "loose" for p in ps]
            assert len(loose) == 1 and loose[0].dynamic
            numpy_types = [loose[0].layers[s.layer].type for s in loose[0].segments if s.layer >= 0]
            assert set(numpy_types) <= {"SDPA", "Split"}, numpy_types  # the mask's Split
        results.append(outs)
    for a, b in zip(*results, strict=True):
        assert np.linalg.norm(a - b) <= 1e-4 * np.linalg.norm(b)


def test_prefills_of_three_lengths(tmp_path, caplog):
    """Prompts of three lengths, one after another: the third prefill's plan is shape-loose
    (the token blobs vary, the empty caches do not), and the kv-head repeat, whose blobs then
    vary, is left to the numpy layers instead of failing the plan's build ("cannot build
    one ... a 4-D blob", with every later prefill in numpy); each prefill's hidden states are
    the numpy layers'."""
    import logging

    name = "qwen3_0.6b_2layer"
    param = tmp_path / f"{name}_decoder.ncnn.param"
    param.write_text((MODELS / "llm" / f"{name}_decoder.ncnn.param").read_text())
    weights = tmp_path / f"{name}_decoder.ncnn.bin"
    weights.write_bytes(random_weights(str(param), seed=0, fp16=True))
    spec = LLMSpec(str(param))
    results = []
    for native in (True, False):
        decoder, _ = load_llm(ncnn_c, str(param), str(weights), "cpu", 1)
        decoder.native_plan = native
        outs = []
        with caplog.at_level(logging.INFO, logger="ncnn_c"):
            for cur in (6, 9, 4, 9):
                arrays = llm_inputs(spec, cur, 0, np.random.default_rng(cur))
                hidden, _ = llm_step(ncnn_c, decoder, None, spec, arrays, None)
                outs.append(hidden)
        if native:
            assert "cannot build one" not in caplog.text
            assert decoder._native.plans.built >= 3
        results.append(outs)
    for a, b in zip(*results, strict=True):
        assert np.linalg.norm(a - b) <= 1e-4 * np.linalg.norm(b)
