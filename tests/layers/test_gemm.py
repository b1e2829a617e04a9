"""Gemm against the PyPI ncnn oracle: transposes, constant A/B/C, every C broadcast, output forms.

The case builders below (``*_cases``) are shared with test_gemm_vulkan.py, which runs the same
(params, weights, inputs) triples on the GPU."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

SIZES = [(5, 7, 6), (1, 1, 1), (1, 9, 4), (8, 1, 3), (7, 13, 16), (64, 48, 96)]
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


# -- the CPU tests -------------------------------------------------------------------------------


def _check(cases):
    for params, weights, inputs in cases:
        check_layer("Gemm", params, weights, inputs)


@pytest.mark.parametrize("M,N,K", SIZES)
@pytest.mark.parametrize("transA,transB", TRANSPOSES)
def test_two_inputs(M, N, K, transA, transB):
    _check(two_inputs_cases(M, N, K, transA, transB))


@pytest.mark.parametrize("M,N,K", C_SIZES)
def test_input_c_broadcasts(M, N, K):
    _check(input_c_broadcasts_cases(M, N, K))


@pytest.mark.parametrize("transA", [0, 1])
def test_constant_a(transA):
    _check(constant_a_cases(transA))


@pytest.mark.parametrize("transB", [0, 1])
def test_constant_b(transB):
    _check(constant_b_cases(transB))


def test_constant_a_and_b():
    _check(constant_a_and_b_cases())


@pytest.mark.parametrize("btype", CONSTANT_C_TYPES)
@pytest.mark.parametrize("transpose", [0, 1])
def test_constant_c(btype, transpose):
    _check(constant_c_cases(btype, transpose))


@pytest.mark.parametrize("n1m,transpose", OUTPUT_FORMS)
def test_output_forms(n1m, transpose):
    g, A, B = _ab(5, 7, 6, "out")
    ret, out = run_layer("Gemm", {11: n1m, 14: transpose}, [], [A, B])
    rows, cols = (7, 5) if transpose else (5, 7)
    assert ret == 0 and out[0].shape == ((rows, 1, cols) if n1m else (rows, cols))
    _check(output_forms_cases(n1m, transpose))


@pytest.mark.parametrize("elemtype", [0, 1, 2, 3])
def test_output_elemtype_and_elempack_are_layout_only(elemtype):
    # fp32 CPU output whatever storage type is asked for, as ncnn's fp32 CPU path gives.
    _check(output_elemtype_cases(elemtype))


def test_three_d_inputs():
    _check(three_d_inputs_cases())


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
