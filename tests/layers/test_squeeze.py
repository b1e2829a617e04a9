"""Squeeze against the oracle: the w/h/d/c flags, the axes array (negative too), dims that are
not 1 staying, squeezing everything to a 1-element blob, every input rank."""

from __future__ import annotations

import itertools
import logging

import pytest
from oracle import check_layer, randn, rng, run_layer

SHAPES = [
    (1,),
    (7,),
    (1, 5),
    (7, 1),
    (1, 1),
    (1, 7, 1),
    (3, 1, 13),
    (1, 1, 1),
    (1, 3, 1, 7),
    (2, 1, 1, 1),
    (1, 1, 1, 1),
]
FLAGS = (0, 1, 11, 2)


@pytest.mark.parametrize("shape", SHAPES)
def test_flags(shape):
    x = randn(rng("squeeze", shape), shape)
    for bits in itertools.product((0, 1), repeat=4):
        params = {k: 1 for k, b in zip(FLAGS, bits, strict=True) if b}
        check_layer("Squeeze", params, [], [x], tol=0)


@pytest.mark.parametrize("shape", SHAPES)
def test_axes(shape):
    x = randn(rng("squeeze-axes", shape), shape)
    dims = len(shape)
    for n in range(1, dims + 1):
        for axes in itertools.combinations(range(dims), n):
            check_layer("Squeeze", {3: list(axes)}, [], [x], tol=0)
            check_layer("Squeeze", {3: [a - dims for a in axes]}, [], [x], tol=0)


def test_axes_win_over_flags():
    x = randn(rng("squeeze-both"), (1, 1, 5))
    check_layer("Squeeze", {0: 1, 1: 1, 2: 1, 3: [0]}, [], [x], tol=0)


def test_big():
    x = randn(rng("squeeze-big"), (1, 227, 227))
    check_layer("Squeeze", {2: 1}, [], [x], tol=0)


def test_bad_axis(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Squeeze", {3: [3]}, [], [randn(rng("sq-bad"), (1, 1, 5))])
    assert ret != 0 and "Squeeze" in caplog.text
