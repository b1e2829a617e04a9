"""int8 Gemm (quantize_term, param 18) against the PyPI ncnn: input A quantized per row and
input B as a whole, int8-stored constant A / B with their scales, transposes, alpha / beta,
every C form, transposed and N1M outputs; the layer and net paths.

The int32 product is exact on both sides and the scales are computed the same way (ncnn's
x86 kernels), so the results agree to the last bits: 1e-6 relative L2.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import make_param, rel_l2, rng, run_net
from test_int8_layers import blob, oracle, run_ours_layer

from ncnn_c.layer._int8 import float2int8

TOL = 1e-6


def check(params, weights, inputs, what=""):
    text = make_param("Gemm", params, [x.shape for x in inputs])
    bin_bytes = b"".join(blob(a, kind) for a, kind in weights)
    ref = _oracle(text, bin_bytes, inputs)
    ret, got = run_net(text, bin_bytes, inputs)
    assert ret == 0, what
    err = rel_l2(got[0], ref)
    assert err <= TOL, f"{what} {params}: relative L2 error {err:.3g}"
    if len(inputs) == 1:
        ret, layer_out = run_ours_layer("Gemm", params, weights, inputs[0])
        assert ret == 0
        assert rel_l2(layer_out, ref) <= TOL


def _oracle(text, bin_bytes, inputs):
    if len(inputs) == 1:
        return oracle(text, bin_bytes, inputs[0])
    from oracle import run_ncnn

    ret, outs = run_ncnn(text, bin_bytes, inputs)
    assert ret == 0
    return outs[0]


def _int8_rows(g, rows, cols):
    """int8 values and per-row scales of a random (rows, cols) fp32 matrix."""
    a = g.uniform(-1.5, 1.5, (rows, cols)).astype(np.float32)
    scales = (127 / np.abs(a).max(axis=1)).astype(np.float32)
    return float2int8(a * scales[:, None]), scales


@pytest.mark.parametrize(
    "M,N,K", [(5, 7, 6), (1, 1, 1), (8, 1, 3), (7, 13, 16), (64, 48, 96), (3, 5, 1500)], ids=str
)
@pytest.mark.parametrize("transA,transB", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_int8_two_inputs(M, N, K, transA, transB):
    g = rng("gemm-int8", M, N, K, transA, transB)
    A = g.uniform(-2, 2, (K, M) if transA else (M, K)).astype(np.float32)
    B = g.uniform(-2, 2, (N, K) if transB else (K, N)).astype(np.float32)
    check({0: 0.75, 2: transA, 3: transB, 18: 2}, [], [A, B])


@pytest.mark.parametrize("transB", [0, 1])
@pytest.mark.parametrize("c_form", [None, (1,), "M", "N", "Mx1", "MxN", "1xN"])
def test_gemm_int8_constant_b(transB, c_form):
    M, N, K = 6, 10, 24
    g = rng("gemm-int8-constB", transB, c_form)
    b8 = g.integers(-127, 128, (K, N)).astype(np.int8)
    stored = b8.T.copy() if transB else b8
    params = {5: 1, 3: transB, 8: N, 9: K, 18: 2, 1: 0.5}
    weights = [(stored, "int8"), (np.float32([g.uniform(50, 150)]), 1)]
    inputs = [g.uniform(-1, 1, (M, K)).astype(np.float32)]
    if c_form is not None:
        shape = {"M": (M,), "N": (N,), "Mx1": (M, 1), "MxN": (M, N), "1xN": (1, N)}.get(c_form, c_form)
        inputs.append(g.uniform(-1, 1, shape).astype(np.float32))
    check(params, weights, inputs)


@pytest.mark.parametrize("transA", [0, 1])
def test_gemm_int8_constant_a(transA):
    M, N, K = 9, 5, 17
    g = rng("gemm-int8-constA", transA)
    a8, scales = _int8_rows(g, M, K)
    stored = a8.T.copy() if transA else a8
    params = {4: 1, 2: transA, 7: M, 9: K, 18: 2, 0: 1.25}
    check(params, [(stored, "int8"), (scales, 1)], [g.uniform(-1, 1, (K, N)).astype(np.float32)])


@pytest.mark.parametrize("btype", [-1, 0, 1, 2, 3, 4])
@pytest.mark.parametrize("transpose", [0, 1])
def test_gemm_int8_constant_c_and_output_forms(btype, transpose):
    M, N, K = 5, 7, 12
    g = rng("gemm-int8-constC", btype, transpose)
    b8 = g.integers(-127, 128, (N, K)).astype(np.int8)
    size = {-1: 0, 0: 1, 1: M, 2: M, 3: M * N, 4: N}[btype]
    weights = [(b8, "int8")] + ([(g.uniform(-1, 1, size), 0)] if size else [])
    weights.append((np.float32([90.0]), 1))
    params = {5: 1, 6: 1, 3: 1, 7: M, 8: N, 9: K, 10: btype, 0: 0.5, 1: 3.0, 14: transpose, 18: 2}
    check(params, weights, [g.uniform(-1, 1, (M, K)).astype(np.float32)])
    check({**params, 11: 1}, weights, [g.uniform(-1, 1, (M, K)).astype(np.float32)])


def test_gemm_int8_constant_a_and_b():
    M, N, K = 4, 6, 40
    g = rng("gemm-int8-constAB")
    a8, scales = _int8_rows(g, M, K)
    b8 = g.integers(-127, 128, (N, K)).astype(np.int8)
    params = {4: 1, 5: 1, 7: M, 8: N, 9: K, 3: 1, 18: 2}
    weights = [(a8, "int8"), (b8, "int8"), (scales, 1), (np.float32([60.0]), 1)]
    check(params, weights, [g.uniform(-1, 1, (M, N)).astype(np.float32)])


def test_gemm_int8_fp32_constant_is_quantized_at_load():
    # ncnn's reference form (its x86 kernels expect int8 storage): the same as B fed as an input
    M, N, K = 6, 8, 20
    g = rng("gemm-int8-fp32B")
    A = g.uniform(-1, 1, (M, K)).astype(np.float32)
    B = g.uniform(-1, 1, (K, N)).astype(np.float32)
    ret, const = run_ours_layer("Gemm", {5: 1, 8: N, 9: K, 18: 2}, [(B, 0), (np.float32([1.0]), 1)], A)
    assert ret == 0
    text = make_param("Gemm", {18: 2}, [A.shape, B.shape])
    ret, outs = run_net(text, b"", [A, B])
    assert ret == 0
    np.testing.assert_array_equal(const, outs[0])
    assert rel_l2(const, A @ B) < 2e-2


@pytest.mark.parametrize("term", [4, 5, 6, 400, 801])
def test_gemm_block_quantized_weights_are_refused(caplog, term):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_ours_layer("Gemm", {18: term}, [], np.ones((2, 2), np.float32))
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert ret != 0 and len(errors) == 1 and "quantize_term" in errors[0], errors


def test_gemm_int8_missing_scales_are_refused(caplog):
    weights = [(np.ones((4, 3), np.int8), "int8")]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_ours_layer("Gemm", {5: 1, 8: 3, 9: 4, 18: 2}, weights, np.ones((2, 4), np.float32))
    errors = [
        r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR and "Gemm" in r.getMessage()
    ]
    assert ret != 0 and len(errors) == 1 and "B_data_int8_scale" in errors[0], errors
