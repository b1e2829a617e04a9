"""Permute against the PyPI ncnn: every order type of 2-D (2), 3-D (6) and 4-D (24) blobs,
packed and odd channel counts, 1-D pass-through, and order types a rank does not have rejected.
One case list, every backend (oracle.backends)."""

from __future__ import annotations

import logging

import pytest
from oracle import backends, check, randn, rng, run_layer

ORDERS = {1: 1, 2: 2, 3: 6, 4: 24}
# a pure copy: fp32 results are bit-exact everywhere
EXACT = dict(tol=0.0, tol_fp32=0.0)
# the 4-D orders (24 per shape) run on the GPU sets whose layouts differ (packing, storage)
FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]

SHAPES = [
    (1, 5),
    (7, 13),
    (16, 32),
    (8, 13),
    (7, 12),
    (1, 1, 1),
    (3, 7, 13),
    (16, 8, 8),
    (8, 5, 7),
    (6, 4, 8),
]
SHAPES_4D = [(2, 3, 5, 7), (4, 1, 6, 6), (4, 3, 8, 5), (3, 4, 2, 7)]
CASES = [(s, t) for s in SHAPES for t in range(ORDERS[len(s)])] + [((7,), None), ((9,), 1)]
CASES_4D = [(s, t) for s in SHAPES_4D for t in range(24)]


def _check(backend, shape, order):
    x = randn(rng("permute", shape), shape)
    check(backend, "Permute", {} if order is None else {0: order}, [], [x], **EXACT)


@pytest.mark.parametrize("shape,order", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Permute"))
def test_orders(shape, order, backend):
    _check(backend, shape, order)


@pytest.mark.parametrize("shape,order", CASES_4D, ids=str)
@pytest.mark.parametrize("backend", backends("Permute", grid=FAST))
def test_orders_4d(shape, order, backend):
    _check(backend, shape, order)


@pytest.mark.parametrize("order", [1, 3, 5])
@pytest.mark.parametrize("backend", backends("Permute", grid=FAST))
def test_big(order, backend):
    check(backend, "Permute", {0: order}, [], [randn(rng("permute-big"), (3, 227, 227))], **EXACT)


@pytest.mark.parametrize("t,shape", [(2, (7, 13)), (6, (3, 7, 13)), (24, (2, 3, 5, 7)), (-1, (3, 7, 13))])
def test_bad_order(t, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Permute", {0: t}, [], [randn(rng("permute-bad"), shape)])
    assert ret != 0 and "Permute" in caplog.text
