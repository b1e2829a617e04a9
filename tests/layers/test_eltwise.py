"""Eltwise against the oracle: product, sum (plain and weighted) and max of 2-5 blobs, every
rank, each case on every backend (oracle.backends: the CPU, and the GPU option grid); then the
CPU's padded one-pass path and the GPU's packings (a big packed blob, inputs of one shape in
different packings), and bad inputs on both."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    SHAPES_ALL,
    backends,
    case_backends,
    check,
    check_layer_gpu,
    default_option,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_net_gpu,
)

# inf and nan (in the data, or in the arbitrary bytes of cstep padding that the one-pass
# path computes over) come out silently, as from ncnn, not as numpy RuntimeWarnings
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

# Shapes only the GPU's list had, whose channels it packs by 4: in the slow run only, with the
# packed GPU sets (the main run's GPU set, fp32, does not pack), to keep this module's main run
# no longer than the two it merges.
SLOW = pytest.mark.slow


def packed(*shape):
    return pytest.param(shape, marks=SLOW, id=str(shape))


PACKED = [(8, 5, 7), (4, 2, 3, 5)]


def _inputs(n: int, shape, key):
    g = rng("eltwise", n, shape, key)
    return [randn(g, shape) for _ in range(n)]


# every op and input count on every shape. The main run checks two and four inputs (three run
# in the weighted sums) and, on the GPU, the shapes (7,) and (3, 7, 13); the rest runs in the
# slow run. With all of it in the main run this module's main run took 32 s against 28 s for
# the two it merges (two shared cores, load ~9), and still 24 s against 17 s with only the GPU
# shapes cut: a CPU net check after the GPU is up costs ~100 ms more (onednn's
# _release_code_pages reads /proc/self/smaps, which lavapipe's mappings make long).
OPS_CASES = [(n, op, shape) for n in (2, 4) for op in (0, 1, 2) for shape in SHAPES_ALL]
OPS_CASES += [pytest.param(3, op, s, marks=SLOW) for op in (0, 1, 2) for s in SHAPES_ALL]
OPS_CASES += [pytest.param(n, op, s, marks=SLOW) for n in (2, 3, 4) for op in (0, 1, 2) for s in PACKED]


@pytest.mark.parametrize(
    "n,op,shape,backend", case_backends("Eltwise", OPS_CASES, gpu_main=lambda c: c[2] in [(7,), (3, 7, 13)])
)
def test_ops(op, n, shape, backend):
    check(backend, "Eltwise", {0: op}, [], _inputs(n, shape, op), tol=0 if op == 2 else 1e-5)


@pytest.mark.parametrize(
    "shape", [(7,), (7, 13), packed(8, 13), (3, 7, 13), packed(8, 5, 7), (2, 3, 5, 7)], ids=str
)
@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("backend", backends("Eltwise"))
def test_weighted_sum(n, shape, backend):
    coeffs = [0.5, -1.25, 2.0, 0.0, -0.75][:n]
    check(backend, "Eltwise", {0: 1, 1: coeffs}, [], _inputs(n, shape, "w"))


# sum takes two coeffs of three, product and max ignore them
EXTRA_COEFFS = [(1, [2.0, -1.0, 5.0]), (0, [2.0, -1.0]), (2, [2.0, -1.0])]


@pytest.mark.parametrize("shape", [(3, 7, 13), packed(8, 7, 13)], ids=str)
@pytest.mark.parametrize("op_coeffs", EXTRA_COEFFS, ids=str)
@pytest.mark.parametrize("backend", backends("Eltwise"))
def test_extra_coeffs_ignored_and_other_ops_ignore_coeffs(op_coeffs, shape, backend):
    op, coeffs = op_coeffs
    check(backend, "Eltwise", {0: op, 1: coeffs}, [], _inputs(2, shape, "extra"), tol=0 if op == 2 else 1e-5)


@pytest.mark.parametrize("backend", backends("Eltwise"))
def test_default_is_product(backend):
    xs = _inputs(2, (3, 7, 13), "default")
    if backend == "cpu":
        ret, out = run_layer("Eltwise", {}, [], xs)
        assert ret == 0
        np.testing.assert_array_equal(out[0], xs[0] * xs[1])
    check(backend, "Eltwise", {}, [], xs)


def _rejected(params, inputs, caplog, text):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Eltwise", params, [], inputs)
    assert ret != 0
    assert text in caplog.text


def test_bad_inputs(caplog):
    a = np.ones((2, 3, 4), np.float32)
    _rejected({0: 1}, [a], caplog, "at least two")
    _rejected({0: 1}, [a, np.ones((2, 3, 5), np.float32)], caplog, "shapes differ")
    _rejected({0: 1}, [a, np.ones((24,), np.float32)], caplog, "shapes differ")
    _rejected({0: 1, 1: [1.0, 2.0]}, [a, a, a], caplog, "coeffs")
    _rejected({0: 3}, [a, a], caplog, "op_type")


@pytest.mark.gpu
@pytest.mark.parametrize(
    "inputs,params,text",
    [
        ([(8, 3, 4), (8, 3, 5)], {0: 1}, "shapes differ"),
        ([(8, 3, 4)] * 3, {0: 1, 1: [1.0, 2.0]}, "coeffs"),
    ],
    ids=["shapes", "coeffs"],
)
def test_bad_inputs_gpu(inputs, params, text, caplog):
    xs = [np.ones(shape, np.float32) for shape in inputs]
    param = make_param("Eltwise", params, inputs, 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, b"", xs, 1, **GPU_GRID["fp32-pack"])
    assert ret != 0
    assert text in caplog.text


@pytest.mark.parametrize("op,coeffs", [(0, None), (1, [2.0, 3.0]), (2, None)], ids=["prod", "sum", "max"])
def test_padding_bytes_never_warn(op, coeffs):
    """The padded one-pass path also combines the cstep padding. Its bytes are whatever the
    allocator left there; here they are huge and nan on purpose. No warning may escape, and
    the visible values are exact."""
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.paramdict import ParamDict

    g = rng("eltwise padding", op)
    xs = [randn(g, (3, 7, 13)) for _ in range(2)]
    mats = [Mat(x) for x in xs]
    for m, fill in zip(mats, (3e38, np.nan), strict=True):
        assert m.cstep > m.w * m.h  # 91 values per channel, padded to 92
        raw = m.raw().view(np.float32).reshape(m.c, m.cstep)
        raw[:, m.w * m.h :] = fill
    layer = create_layer_cpu("Eltwise")
    pd = ParamDict()
    pd.set(0, op)
    if coeffs is not None:
        pd.set(1, np.asarray(coeffs, np.float32))
    assert layer.load_param(pd) == 0
    top = Mat()
    opt = default_option()
    assert layer.forward(mats, [top], opt) == 0
    want = {0: xs[0] * xs[1], 1: 2.0 * xs[0] + 3.0 * xs[1], 2: np.maximum(xs[0], xs[1])}[op]
    np.testing.assert_allclose(np.array(top.numpy()), want, rtol=1e-6)


@pytest.mark.gpu
def test_big_blob_packed():
    check_layer_gpu("Eltwise", {0: 1}, [], _inputs(2, (16, 57, 57), "big"), grid=["fp32-pack", "fp16s-pack"])


# a 1x1 identity Convolution (which does not pack) makes one input elempack 1 while the
# other, straight from an Input, is elempack 4
MIXED = """7767517
4 4
Input in0 0 1 in0 0=7 1=5 2=8
Input in1 0 1 in1 0=7 1=5 2=8
Convolution conv 1 1 in1 c1 0=8 1=1 6=64
Eltwise op 2 1 in0 c1 out0 0=1 -23301=2,0.5,2.0
"""


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fp32-pack", "fp16s-pack", "fp16pa-pack"])
def test_mixed_packing(name):
    a, b = _inputs(2, (8, 5, 7), "mixed")
    ret, got = run_net_gpu(MIXED, make_bin([(np.eye(8, dtype=np.float32), 0)]), [a, b], 1, **GPU_GRID[name])
    assert ret == 0
    ref = 0.5 * a + 2.0 * b
    tol = 1e-5 if name == "fp32-pack" else 1e-2
    assert np.linalg.norm(got[0] - ref) / np.linalg.norm(ref) <= tol
