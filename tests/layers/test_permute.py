"""Permute against the oracle: every order type of 2-D (2), 3-D (6) and 4-D (24) blobs, 1-D
pass-through, and order types a rank does not have rejected."""

from __future__ import annotations

import logging

import pytest
from oracle import check_layer, randn, rng, run_layer

ORDERS = {2: 2, 3: 6, 4: 24}


@pytest.mark.parametrize(
    "shape", [(1, 5), (7, 13), (16, 32), (1, 1, 1), (3, 7, 13), (16, 8, 8), (2, 3, 5, 7), (4, 1, 6, 6)]
)
def test_orders(shape):
    x = randn(rng("permute", shape), shape)
    for t in range(ORDERS[len(shape)]):
        check_layer("Permute", {0: t}, [], [x], tol=0)


def test_1d_passes_through():
    check_layer("Permute", {}, [], [randn(rng("permute1"), (7,))], tol=0)


def test_big():
    x = randn(rng("permute-big"), (3, 227, 227))
    for t in (1, 3, 5):
        check_layer("Permute", {0: t}, [], [x], tol=0)


@pytest.mark.parametrize("t,shape", [(2, (7, 13)), (6, (3, 7, 13)), (24, (2, 3, 5, 7)), (-1, (3, 7, 13))])
def test_bad_order(t, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Permute", {0: t}, [], [randn(rng("permute-bad"), shape)])
    assert ret != 0 and "Permute" in caplog.text
