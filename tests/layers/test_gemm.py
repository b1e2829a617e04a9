"""Gemm against the PyPI ncnn oracle: transposes, constant A/B/C, every C broadcast, output
forms, 3-D and 1-D inputs, a larger product and a long K, each case on every backend
(oracle.backends: the CPU, and the GPU option grid); then what only the GPU form has (operands
arriving in elempack 1 and 4, tops written in both), the CPU's numpy definition, and bad
inputs on both.

A case builder (``*_cases``) returns a list of (params, weights, inputs); each is one case."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    backends,
    check,
    check_layer_gpu,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_net_gpu,
)

from ncnn_c.layer.vulkan.gemm_vulkan import Gemm_vulkan

# with packing on, the GPU gets A packed when its stored rows (M, or K transposed) divide by
# 4, and packs the top when M (N with output_transpose) does: the last two sizes, which only
# the GPU's list had, run in the slow run with the packed sets (the main run's fp32 set does
# not pack)
SIZES = [(5, 7, 6), (1, 1, 1), (1, 9, 4), (8, 1, 3), (7, 13, 16), (64, 48, 96)]
SIZES += [pytest.param(12, 8, 5, marks=pytest.mark.slow), pytest.param(8, 12, 16, marks=pytest.mark.slow)]
TRANSPOSES = [(0, 0), (1, 0), (0, 1), (1, 1)]
C_SIZES = [(5, 7, 6), (4, 4, 3), (1, 6, 2), (6, 1, 2)]
CONSTANT_C_TYPES = [-1, 0, 1, 2, 3, 4]
OUTPUT_FORMS = [(1, 0), (0, 1), (1, 1)]


def _ab(M, N, K, key=()):
    g = rng("gemm", M, N, K, key)
    return g, randn(g, (M, K)), randn(g, (K, N))


def _c_inputs(g, M, N):
    """Every C blob shape ncnn recognises: scalar, per-M, per-N, M x 1, M x N, 1 x N."""
    return [randn(g, s) for s in ((1,), (M,), (N,), (M, 1), (M, N), (1, N))]


# -- the cases: lists of (params, weights, inputs) ----------------------------------------------


def two_inputs_cases(M, N, K, transA, transB):
    g, A, B = _ab(M, N, K, (transA, transB))
    a = A.T.copy() if transA else A
    b = B.T.copy() if transB else B
    return [({0: 0.75, 2: transA, 3: transB}, [], [a, b])]


def input_c_broadcasts_cases(M, N, K):
    g, A, B = _ab(M, N, K, "c")
    cases = []
    for C in _c_inputs(g, M, N):
        cases += [({0: 0.5, 1: 2.0}, [], [A, B, C]), ({1: -1.5, 2: 1, 14: 1}, [], [A.T.copy(), B, C])]
    return cases


def constant_a_cases(transA):
    M, N, K = 6, 5, 7
    g, A, B = _ab(M, N, K, ("constA", transA))
    a = A.T.copy() if transA else A
    params = {4: 1, 2: transA, 7: M, 9: K, 0: 1.25}
    cases = [(params, [(a, 0)], [B]), (params, [(a, "fp16")], [B])]
    return cases + [(params, [(a, 0)], [B, C]) for C in _c_inputs(g, M, N)]


def constant_b_cases(transB):
    M, N, K = 6, 5, 7
    g, A, B = _ab(M, N, K, ("constB", transB))
    b = B.T.copy() if transB else B
    params = {5: 1, 3: transB, 8: N, 9: K}
    return [(params, [(b, 0)], [A])] + [({**params, 1: 0.5}, [(b, 0)], [A, C]) for C in _c_inputs(g, M, N)]


def constant_a_and_b_cases():
    M, N, K = 4, 6, 5
    g, A, B = _ab(M, N, K, "constAB")
    params = {4: 1, 5: 1, 7: M, 8: N, 9: K, 3: 1}
    return [(params, [(A, 0), (B.T.copy(), 0)], [randn(g, (M, N))])]


def constant_c_cases(btype, transpose):
    M, N, K = 5, 7, 6
    g, A, B = _ab(M, N, K, ("constC", btype))
    size = {-1: 0, 0: 1, 1: M, 2: M, 3: M * N, 4: N}[btype]
    weights = [(B, 0)] + ([(randn(g, (size,)), 0)] if size else [])
    return [
        ({5: 1, 6: 1, 7: M, 8: N, 9: K, 10: btype, 0: 0.5, 1: 3.0, 14: transpose}, weights, [A]),
        # C constant with both A and B as inputs
        ({6: 1, 7: M, 8: N, 10: btype, 1: 0.25}, weights[1:], [A, B]),
    ]


def output_forms_cases(n1m, transpose):
    g, A, B = _ab(5, 7, 6, "out")
    return [({11: n1m, 14: transpose}, [], [A, B, randn(g, (5, 1))])]


def output_elemtype_cases(elemtype):
    # (output_elempack 4 is not checked: the oracle crashes when M is not a multiple of 4)
    g, A, B = _ab(5, 7, 6, "elem")
    return [({13: elemtype, 12: 1}, [], [A, B])]


def three_d_inputs_cases():
    g = rng("gemm 3d")
    return [
        ({}, [], [randn(g, (5, 1, 6)), randn(g, (6, 1, 7))]),
        ({2: 1}, [], [randn(g, (6, 1, 5)), randn(g, (6, 7))]),
        # a 1-D A is one row
        ({}, [], [randn(g, (6,)), randn(g, (6, 7))]),
    ]


def large_cases():
    g, A, B = _ab(96, 130, 200, "large")
    return [({0: 0.5}, [], [A, B])]


def long_k_cases():
    # K past llvmpipe's 65535 loop iterations per invocation
    g, A, B = _ab(2, 5, 70001, "longk")
    return [({}, [], [A, B])]


def each(builder, *args):
    """(builder, args, index) of every case a builder makes, as pytest params."""
    return [
        pytest.param(builder, args, i, id=f"{builder.__name__.removesuffix('_cases')}{args}-{i}")
        for i in range(len(builder(*args)))
    ]


BACKENDS = pytest.mark.parametrize("backend", backends("Gemm"))


def _check(backend, builder, args, i):
    params, weights, inputs = builder(*args)[i]
    return check(backend, "Gemm", params, weights, inputs)


@pytest.mark.parametrize("M,N,K", SIZES)
@pytest.mark.parametrize("transA,transB", TRANSPOSES)
@BACKENDS
def test_two_inputs(M, N, K, transA, transB, backend):
    _check(backend, two_inputs_cases, (M, N, K, transA, transB), 0)


CASES = [c for M, N, K in C_SIZES for c in each(input_c_broadcasts_cases, M, N, K)]
CASES += [c for t in (0, 1) for c in each(constant_a_cases, t)]
CASES += [c for t in (0, 1) for c in each(constant_b_cases, t)]
CASES += each(constant_a_and_b_cases)
CASES += [c for btype in CONSTANT_C_TYPES for t in (0, 1) for c in each(constant_c_cases, btype, t)]
# output_elemtype / elempack are layout only: fp32 CPU output whatever storage type is asked
# for, as ncnn's fp32 CPU path gives
CASES += [c for e in (0, 1, 2, 3) for c in each(output_elemtype_cases, e)]
CASES += each(three_d_inputs_cases) + each(large_cases) + each(long_k_cases)


@pytest.mark.parametrize("builder,args,i", CASES)
@BACKENDS
def test_gemm(builder, args, i, backend):
    _check(backend, builder, args, i)


@pytest.mark.parametrize("n1m,transpose", OUTPUT_FORMS)
@BACKENDS
def test_output_forms(n1m, transpose, backend):
    if backend == "cpu":
        g, A, B = _ab(5, 7, 6, "out")
        ret, out = run_layer("Gemm", {11: n1m, 14: transpose}, [], [A, B])
        rows, cols = (7, 5) if transpose else (5, 7)
        assert ret == 0 and out[0].shape == ((rows, 1, cols) if n1m else (rows, cols))
    _check(backend, output_forms_cases, (n1m, transpose), 0)


def test_matches_numpy_definition():
    g, A, B = _ab(4, 3, 5, "np")
    C = randn(g, (4, 1))
    ret, out = run_layer("Gemm", {0: 0.5, 1: 2.0}, [], [A, B, C])
    assert ret == 0
    ref = 0.5 * (A.astype(np.float64) @ B + 2.0 * C)
    np.testing.assert_allclose(out[0], ref, rtol=1e-5, atol=1e-5)


def _rejects(caplog, params, weights, inputs, words):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Gemm", params, weights, inputs)
    assert ret != 0
    assert any(words in r.getMessage() for r in caplog.records), caplog.text


def test_bad_inputs(caplog):
    g, A, B = _ab(5, 7, 6, "bad")
    _rejects(caplog, {}, [], [A, B[:5]], "but B is")
    _rejects(caplog, {}, [], [A, B, randn(g, (3,))], "broadcasts")
    _rejects(caplog, {}, [], [A, B, randn(g, (2, 5, 7))], "broadcasts")
    _rejects(caplog, {}, [], [randn(g, (5, 2, 6)), B], "(c, 1, w)")
    _rejects(caplog, {}, [], [randn(g, (1, 5, 1, 6)), B], "(c, 1, w)")
    _rejects(caplog, {}, [], [A], "inputs")
    _rejects(caplog, {4: 1, 7: 5}, [(A, 0)], [B], "constantK")
    _rejects(caplog, {5: 1, 9: 6}, [(B, 0)], [A], "constantN")
    _rejects(caplog, {6: 1, 10: 5}, [], [A, B], "constant_broadcast_type_C")
    _rejects(caplog, {6: 1, 10: 1, 7: 4}, [(randn(g, (4,)), 0)], [A, B], "does not fit")
    _rejects(caplog, {18: 400}, [], [A, B], "quantized")  # block-quantized weights (int8 is supported)


# -- what only the GPU form has ------------------------------------------------------------------
@pytest.fixture
def packs(monkeypatch):
    """(A, B, C, top) elempacks of every GPU forward (0: the operand is no blob)."""
    seen: set[tuple[int, int, int, int]] = set()
    forward = Gemm_vulkan.forward_vk

    def spy(self, bottom, top, cmd, opt):
        ret = forward(self, bottom, top, cmd, opt)
        blobs = list(bottom) if isinstance(bottom, list) else [bottom]
        ins = [] if self.constantA else [blobs.pop(0).elempack]
        ins += [] if self.constantB else [blobs.pop(0).elempack]
        ins += [blobs[0].elempack] if blobs else []
        seen.add((*ins, (top[0] if isinstance(top, list) else top).elempack))
        return ret

    monkeypatch.setattr(Gemm_vulkan, "forward_vk", spy)
    return seen


@pytest.mark.gpu
@pytest.mark.parametrize("output_transpose", [0, 1])
@pytest.mark.parametrize("n1m", [0, 1])
def test_packed_operands_and_tops(output_transpose, n1m, packs):
    """A (8 x 12), B (12 x 16) and an 8 x 16 C all arrive packed; the top is packed along
    M, or along N when transposed, as a 2-D or (c, 1, w) blob."""
    g, A, B = _ab(8, 16, 12, ("packed", output_transpose, n1m))
    C = randn(g, (8, 16))
    params = {0: 0.5, 1: 1.5, 11: n1m, 14: output_transpose}
    check_layer_gpu("Gemm", params, [], [A, B, C], grid=["fp32-pack", "fp16s-pack", "fp16pa-pack"])
    assert packs == {(4, 4, 4, 4)}
    # transposed operands: stored rows are K for A (12) and N for B (16)
    check_layer_gpu(
        "Gemm", {**params, 2: 1, 3: 1}, [], [A.T.copy(), B.T.copy(), randn(g, (8, 1))], grid=["fp32-pack"]
    )
    assert packs == {(4, 4, 4, 4)}


@pytest.mark.gpu
def test_mixed_packings(packs):
    """M = 6 (A and the top unpacked) with K = 8 (B packed) and a per-M 1-D C; then a top
    packed along N while A (M = 6) is not."""
    g, A, B = _ab(6, 5, 8, "mixed")
    check_layer_gpu("Gemm", {}, [], [A, B, randn(g, (6,))], grid=["fp32-pack", "fp16sa-pack"])
    assert packs == {(1, 4, 1, 1)}
    # output_transpose with N = 8: the top (8 rows) is packed although M = 6 is not
    g, A, B = _ab(6, 8, 5, "mixed-t")
    check_layer_gpu("Gemm", {14: 1}, [], [A, B], grid=["fp32-pack", "fp16sa-pack"])
    assert (1, 1, 4) in packs


@pytest.mark.gpu
def test_bad_inputs_on_the_gpu(caplog):
    g, A, B = _ab(5, 7, 6, "bad")
    for inputs, words in [([A, B[:5]], "but B is"), ([A, B, randn(g, (3,))], "broadcasts")]:
        caplog.clear()
        param = make_param("Gemm", {}, [x.shape for x in inputs], 1)
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            ret, _ = run_net_gpu(param, make_bin([]), inputs, 1, **GPU_GRID["fp32"])
        assert ret != 0
        assert words in caplog.text
