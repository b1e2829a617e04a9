"""Gemm against the PyPI ncnn oracle: transposes, constant A/B/C, every C broadcast, output forms."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

SIZES = [(5, 7, 6), (1, 1, 1), (1, 9, 4), (8, 1, 3), (7, 13, 16), (64, 48, 96)]


def _ab(M, N, K, key=()):
    g = rng("gemm", M, N, K, key)
    return g, randn(g, (M, K)), randn(g, (K, N))


def _c_inputs(g, M, N):
    """Every C blob shape ncnn recognises: scalar, per-M, per-N, M x 1, M x N, 1 x N."""
    return [randn(g, s) for s in ((1,), (M,), (N,), (M, 1), (M, N), (1, N))]


@pytest.mark.parametrize("M,N,K", SIZES)
@pytest.mark.parametrize("transA,transB", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_two_inputs(M, N, K, transA, transB):
    g, A, B = _ab(M, N, K, (transA, transB))
    a = A.T.copy() if transA else A
    b = B.T.copy() if transB else B
    check_layer("Gemm", {0: 0.75, 2: transA, 3: transB}, [], [a, b])


@pytest.mark.parametrize("M,N,K", [(5, 7, 6), (4, 4, 3), (1, 6, 2), (6, 1, 2)])
def test_input_c_broadcasts(M, N, K):
    g, A, B = _ab(M, N, K, "c")
    for C in _c_inputs(g, M, N):
        check_layer("Gemm", {0: 0.5, 1: 2.0}, [], [A, B, C])
        check_layer("Gemm", {1: -1.5, 2: 1, 14: 1}, [], [A.T.copy(), B, C])


@pytest.mark.parametrize("transA", [0, 1])
def test_constant_a(transA):
    M, N, K = 6, 5, 7
    g, A, B = _ab(M, N, K, ("constA", transA))
    a = A.T.copy() if transA else A
    params = {4: 1, 2: transA, 7: M, 9: K, 0: 1.25}
    check_layer("Gemm", params, [(a, 0)], [B])
    check_layer("Gemm", params, [(a, "fp16")], [B])
    for C in _c_inputs(g, M, N):
        check_layer("Gemm", params, [(a, 0)], [B, C])


@pytest.mark.parametrize("transB", [0, 1])
def test_constant_b(transB):
    M, N, K = 6, 5, 7
    g, A, B = _ab(M, N, K, ("constB", transB))
    b = B.T.copy() if transB else B
    params = {5: 1, 3: transB, 8: N, 9: K}
    check_layer("Gemm", params, [(b, 0)], [A])
    for C in _c_inputs(g, M, N):
        check_layer("Gemm", {**params, 1: 0.5}, [(b, 0)], [A, C])


def test_constant_a_and_b():
    M, N, K = 4, 6, 5
    g, A, B = _ab(M, N, K, "constAB")
    params = {4: 1, 5: 1, 7: M, 8: N, 9: K, 3: 1}
    check_layer("Gemm", params, [(A, 0), (B.T.copy(), 0)], [randn(g, (M, N))])


@pytest.mark.parametrize("btype", [-1, 0, 1, 2, 3, 4])
@pytest.mark.parametrize("transpose", [0, 1])
def test_constant_c(btype, transpose):
    M, N, K = 5, 7, 6
    g, A, B = _ab(M, N, K, ("constC", btype))
    size = {-1: 0, 0: 1, 1: M, 2: M, 3: M * N, 4: N}[btype]
    weights = [(B, 0)] + ([(randn(g, (size,)), 0)] if size else [])
    params = {5: 1, 6: 1, 7: M, 8: N, 9: K, 10: btype, 0: 0.5, 1: 3.0, 14: transpose}
    check_layer("Gemm", params, weights, [A])
    # C constant with both A and B as inputs
    params = {6: 1, 7: M, 8: N, 10: btype, 1: 0.25}
    check_layer("Gemm", params, weights[1:], [A, B])


@pytest.mark.parametrize("n1m,transpose", [(1, 0), (0, 1), (1, 1)])
def test_output_forms(n1m, transpose):
    g, A, B = _ab(5, 7, 6, "out")
    ret, out = run_layer("Gemm", {11: n1m, 14: transpose}, [], [A, B])
    rows, cols = (7, 5) if transpose else (5, 7)
    assert ret == 0 and out[0].shape == ((rows, 1, cols) if n1m else (rows, cols))
    check_layer("Gemm", {11: n1m, 14: transpose}, [], [A, B, randn(g, (5, 1))])


@pytest.mark.parametrize("elemtype", [0, 1, 2, 3])
def test_output_elemtype_and_elempack_are_layout_only(elemtype):
    # fp32 CPU output whatever storage type is asked for, as ncnn's fp32 CPU path gives.
    # (output_elempack 4 is not checked: the oracle crashes when M is not a multiple of 4.)
    g, A, B = _ab(5, 7, 6, "elem")
    check_layer("Gemm", {13: elemtype, 12: 1}, [], [A, B])


def test_three_d_inputs():
    g = rng("gemm 3d")
    check_layer("Gemm", {}, [], [randn(g, (5, 1, 6)), randn(g, (6, 1, 7))])
    check_layer("Gemm", {2: 1}, [], [randn(g, (6, 1, 5)), randn(g, (6, 7))])
    # a 1-D A is one row
    check_layer("Gemm", {}, [], [randn(g, (6,)), randn(g, (6, 7))])


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
    _rejects(caplog, {18: 1}, [], [A, B], "quantized")
