"""Eltwise against the oracle: product, sum (plain and weighted) and max of 2-4 blobs, every rank."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, default_option, randn, rng, run_layer

# inf and nan (in the data, or in the arbitrary bytes of cstep padding that the one-pass
# path computes over) come out silently, as from ncnn, not as numpy RuntimeWarnings
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _inputs(n: int, shape, key):
    g = rng("eltwise", n, shape, key)
    return [randn(g, shape) for _ in range(n)]


@pytest.mark.parametrize("op", [0, 1, 2])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_ops(op, n):
    for shape in SHAPES_ALL:
        check_layer("Eltwise", {0: op}, [], _inputs(n, shape, op), tol=0 if op == 2 else 1e-5)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_weighted_sum(n):
    coeffs = [0.5, -1.25, 2.0, 0.0, -0.75][:n]
    for shape in [(7,), (7, 13), (3, 7, 13), (2, 3, 5, 7)]:
        check_layer("Eltwise", {0: 1, 1: coeffs}, [], _inputs(n, shape, "w"))


def test_extra_coeffs_ignored_and_other_ops_ignore_coeffs():
    xs = _inputs(2, (3, 7, 13), "extra")
    check_layer("Eltwise", {0: 1, 1: [2.0, -1.0, 5.0]}, [], xs)
    check_layer("Eltwise", {0: 0, 1: [2.0, -1.0]}, [], xs)
    check_layer("Eltwise", {0: 2, 1: [2.0, -1.0]}, [], xs, tol=0)


def test_default_is_product():
    xs = _inputs(2, (3, 7, 13), "default")
    ret, out = run_layer("Eltwise", {}, [], xs)
    assert ret == 0
    np.testing.assert_array_equal(out[0], xs[0] * xs[1])
    check_layer("Eltwise", {}, [], xs)


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
