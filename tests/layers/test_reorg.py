"""Reorg against the oracle: strides 1-4, both channel orders (mode 0 and 1), sizes that do
not divide by the stride, 2-D input; too-small blobs and bad params rejected."""

from __future__ import annotations

import logging

import pytest
from oracle import check_layer, randn, rng, run_layer


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 7, 13), (16, 8, 8), (2, 12, 12), (5, 9, 6)])
def test_strides_and_modes(shape):
    x = randn(rng("reorg", shape), shape)
    for stride in range(1, 5):
        if stride > min(shape[1:]):
            continue
        for mode in (0, 1):
            check_layer("Reorg", {0: stride, 1: mode}, [], [x], tol=0)


def test_defaults_and_2d():
    check_layer("Reorg", {}, [], [randn(rng("reorg-d"), (3, 7, 13))], tol=0)
    check_layer("Reorg", {0: 2}, [], [randn(rng("reorg-2d"), (7, 13))], tol=0)
    check_layer("Reorg", {0: 2, 1: 1}, [], [randn(rng("reorg-2d"), (8, 12))], tol=0)


def test_big():
    check_layer("Reorg", {0: 2, 1: 1}, [], [randn(rng("reorg-big"), (3, 227, 227))], tol=0)


@pytest.mark.parametrize(
    "params,shape", [({0: 4}, (3, 3, 13)), ({0: 0}, (3, 7, 13)), ({0: 2, 1: 2}, (3, 8, 8)), ({0: 2}, (8,))]
)
def test_bad(params, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Reorg", params, [], [randn(rng("reorg-bad"), shape)])
    assert ret != 0 and "Reorg" in caplog.text
