"""MatMul against the PyPI ncnn oracle over the cases of ncnn's tests/test_matmul.cpp, plus batch
broadcasts that file does not try, each case on every backend (the CPU and the GPU option grid:
every rank pair and transB runs on the GPU), and inputs that cannot multiply on both."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import GPU_GRID, backends, check, make_bin, make_param, rng, run_layer, run_net_gpu

# ncnn's RandomMat sizes (w[, h[, d], c]) of A and B, and transB; numpy shapes are these reversed
NCNN_CASES = [
    ((124,), (124,), 0), ((127,), (127,), 0), ((128,), (128,), 0),
    ((5,), (6, 5), 0), ((16,), (12, 16), 0), ((11,), (16, 11), 0),
    ((5,), (5, 6), 1), ((16,), (16, 12), 1), ((11,), (11, 16), 1),
    ((13,), (7, 13, 12), 0), ((24,), (6, 24, 16), 0), ((20,), (8, 20, 19), 0),
    ((13,), (13, 7, 12), 1), ((24,), (24, 6, 16), 1), ((20,), (20, 8, 19), 1),
    ((13,), (7, 13, 5, 12), 0), ((24,), (6, 24, 4, 16), 0), ((20,), (8, 20, 3, 19), 0),
    ((13,), (13, 7, 5, 12), 1), ((24,), (24, 6, 4, 16), 1), ((20,), (20, 8, 3, 19), 1),
    ((5, 6), (5,), 0), ((16, 12), (16,), 0), ((11, 16), (11,), 0),
    ((32, 3, 10), (32,), 0), ((31, 4, 16), (31,), 0), ((28, 5, 28), (28,), 0),
    ((32, 3, 4, 10), (32,), 0), ((31, 4, 5, 16), (31,), 0), ((18, 5, 6, 28), (18,), 0),
    ((14, 10), (5, 14), 0), ((16, 16), (10, 16), 0), ((14, 28), (9, 14), 0),
    ((14, 10), (14, 5), 1), ((16, 16), (16, 10), 1), ((14, 28), (14, 9), 1),
    ((5, 4), (4, 5, 12), 0), ((5, 14), (5, 5, 16), 0), ((5, 24), (6, 5, 19), 0),
    ((5, 4), (5, 4, 12), 1), ((5, 14), (5, 5, 16), 1), ((5, 24), (5, 6, 19), 1),
    ((5, 4), (4, 5, 2, 12), 0), ((5, 14), (5, 5, 3, 16), 0), ((5, 24), (6, 5, 4, 19), 0),
    ((5, 4), (5, 4, 2, 12), 1), ((5, 14), (5, 5, 3, 16), 1), ((5, 24), (5, 6, 4, 19), 1),
    ((14, 23, 10), (5, 14), 0), ((16, 22, 16), (10, 16), 0), ((14, 20, 28), (9, 14), 0),
    ((14, 23, 10), (14, 5), 1), ((16, 22, 16), (16, 10), 1), ((14, 20, 28), (14, 9), 1),
    ((14, 13, 2, 10), (5, 14), 0), ((16, 12, 3, 16), (10, 16), 0), ((14, 10, 4, 28), (9, 14), 0),
    ((14, 13, 2, 10), (14, 5), 1), ((16, 12, 3, 16), (16, 10), 1), ((14, 10, 4, 28), (14, 9), 1),
    ((14, 23, 10), (5, 14, 10), 0), ((16, 22, 16), (10, 16, 16), 0), ((14, 20, 28), (9, 14, 28), 0),
    ((14, 23, 10), (14, 5, 10), 1), ((16, 22, 16), (16, 10, 16), 1), ((14, 20, 28), (14, 9, 28), 1),
    ((14, 23, 10), (5, 14, 1, 16), 0), ((16, 22, 9), (10, 16, 1, 17), 0), ((14, 20, 8), (9, 14, 1, 18), 0),
    ((14, 23, 10), (14, 5, 1, 16), 1), ((16, 22, 9), (16, 10, 1, 17), 1), ((14, 20, 8), (14, 9, 1, 18), 1),
    ((14, 23, 10, 1), (5, 14, 1, 16), 0), ((16, 22, 9, 1), (10, 16, 1, 17), 0),
    ((14, 20, 8, 1), (9, 14, 1, 18), 0), ((14, 23, 10, 1), (14, 5, 1, 16), 1),
    ((16, 22, 9, 1), (16, 10, 1, 17), 1), ((14, 20, 8, 1), (14, 9, 1, 18), 1),
    ((14, 23, 10, 16), (5, 14, 10, 16), 0), ((16, 22, 9, 17), (10, 16, 9, 17), 0),
    ((14, 20, 8, 18), (9, 14, 8, 18), 0), ((14, 23, 10, 16), (14, 5, 10, 16), 1),
    ((16, 22, 9, 17), (16, 10, 9, 17), 1), ((14, 20, 8, 18), (14, 9, 8, 18), 1),
]  # fmt: skip
# batch axes of size 1 on either side, each axis on its own
BROADCAST_CASES = [
    ((6, 5, 1), (4, 6, 3), 0), ((6, 5, 3), (4, 6, 1), 0), ((6, 5, 1), (6, 4, 3), 1),
    ((6, 5, 3, 1), (4, 6, 1, 2), 0), ((6, 5, 1, 2), (6, 4, 3, 1), 1), ((6, 5), (4, 6, 3, 2), 0),
    ((6, 5, 2), (6, 4, 2, 3), 1),
]  # fmt: skip


def _inputs(a_wh, b_wh, key):
    g = rng("matmul", a_wh, b_wh, key)
    return [g.uniform(-1.2, 1.2, tuple(reversed(s))).astype(np.float32) for s in (a_wh, b_wh)]


# MatMul_vulkan takes elempack 1 blobs (the net unpacks packed ones), so ncnn's 84 cases run on
# three GPU option sets (fp32, fp16 storage with packing on, fp16 packed without storage) to keep
# the lavapipe run short; the broadcast cases run on the whole grid
NCNN_GRID = ["fp32", "fp16s-pack", "fp16pa-pack"]


def _check(a, b, transb, backend):
    inputs = _inputs(a, b, transb)
    check(backend, "MatMul", {0: transb}, [], inputs)
    if backend == "cpu":
        # numpy's definition, as the layer doc says
        want = np.matmul(inputs[0], np.swapaxes(inputs[1], -1, -2) if transb and len(b) > 1 else inputs[1])
        ret, got = run_layer("MatMul", {0: transb}, [], inputs)
        assert ret == 0
        np.testing.assert_allclose(got[0], want.reshape(want.shape or (1,)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a,b,transb", NCNN_CASES, ids=str)
@pytest.mark.parametrize("backend", backends("MatMul", grid=NCNN_GRID))
def test_matmul(a, b, transb, backend):
    _check(a, b, transb, backend)


@pytest.mark.parametrize("a,b,transb", BROADCAST_CASES, ids=str)
@pytest.mark.parametrize("backend", backends("MatMul"))
def test_matmul_broadcast(a, b, transb, backend):
    _check(a, b, transb, backend)


def _bad_cases():
    a, b = _inputs((14, 10), (5, 14), "bad")
    return [
        ([a, b[:13]], "does not multiply", 0),
        ([a, b], "does not multiply", 1),
        ([a[None].repeat(3, 0), b[None].repeat(2, 0)], "does not multiply", 0),
    ]


def test_bad_inputs(caplog):
    def rejects(inputs, words, transb=0):
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            ret, _ = run_layer("MatMul", {0: transb}, [], inputs)
        assert ret != 0
        assert any("MatMul" in r.getMessage() and words in r.getMessage() for r in caplog.records), (
            caplog.text
        )

    for inputs, words, transb in _bad_cases():
        rejects(inputs, words, transb)
    a, b = _bad_cases()[0][0]
    rejects([a], "inputs")
    rejects([a, b, b], "inputs")


@pytest.mark.gpu
@pytest.mark.parametrize("inputs,words,transb", _bad_cases(), ids=["k", "transB", "batch"])
def test_bad_inputs_on_the_gpu(caplog, inputs, words, transb):
    text = make_param("MatMul", {0: transb}, [x.shape for x in inputs])
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin([]), inputs, **GPU_GRID["fp16s-pack"])
    assert ret != 0
    assert any("MatMul" in r.getMessage() and words in r.getMessage() for r in caplog.records), caplog.text
