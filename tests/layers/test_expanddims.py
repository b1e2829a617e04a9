"""ExpandDims against the oracle: every axes set for 1-D, 2-D and 3-D inputs (negative axes
too), and impossible axes rejected."""

from __future__ import annotations

import itertools
import logging

import pytest
from oracle import check_layer, randn, rng, run_layer

SHAPES = [(1,), (7,), (64,), (1, 5), (7, 13), (3, 7, 13), (1, 1, 1)]


def axes_sets(dims):
    """Every axes list ExpandDims takes on a ``dims``-D input (up to 4-D out), each as
    (axes, the same axes counted from the end); shared with test_expanddims_vulkan.py."""
    for n in range(1, 4 - dims + 1):
        outdims = dims + n
        for axes in itertools.combinations(range(outdims), n):
            yield list(axes), [a - outdims for a in axes]


@pytest.mark.parametrize("shape", SHAPES)
def test_axes(shape):
    x = randn(rng("expanddims", shape), shape)
    for axes, negative in axes_sets(len(shape)):
        check_layer("ExpandDims", {3: axes}, [], [x], tol=0)
        check_layer("ExpandDims", {3: negative}, [], [x], tol=0)


def test_no_axes_is_identity():
    check_layer("ExpandDims", {}, [], [randn(rng("ed-none"), (3, 7, 13))], tol=0)


def test_big():
    check_layer("ExpandDims", {3: [1]}, [], [randn(rng("ed-big"), (3, 227, 227))], tol=0)


@pytest.mark.parametrize(
    "axes,shape", [([0, 0], (7,)), ([4], (7,)), ([0], (2, 3, 4, 5)), ([0, 1], (3, 4, 5)), ([-4], (7,))]
)
def test_bad_axes(axes, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("ExpandDims", {3: axes}, [], [randn(rng("ed-bad"), shape)])
    assert ret != 0 and "ExpandDims" in caplog.text


def test_legacy_flags_are_ignored():
    # ncnn dropped expand_w/h/c (params 0-2) in 2021; its ExpandDims reads only the axes
    x = randn(rng("ed-legacy"), (7, 13))
    check_layer("ExpandDims", {0: 1, 1: 1, 2: 1}, [], [x], tol=0)
    check_layer("ExpandDims", {0: 1, 3: [0]}, [], [x], tol=0)
