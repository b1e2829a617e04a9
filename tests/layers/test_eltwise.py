"""Eltwise against the oracle: product, sum (plain and weighted) and max of 2-4 blobs, every rank."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer


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
