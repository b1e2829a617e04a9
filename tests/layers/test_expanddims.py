"""ExpandDims against the PyPI ncnn: every axes set for 1-D, 2-D and 3-D inputs (negative axes
too), packed and unpacked, and impossible axes rejected. One case list, every backend
(oracle.backends)."""

from __future__ import annotations

import itertools
import logging

import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

SHAPES = [(1,), (7,), (8,), (64,), (1, 5), (7, 13), (8, 5), (3, 7, 13), (8, 5, 7), (1, 1, 1)]
# a pure copy: fp32 results are bit-exact everywhere
EXACT = dict(tol=0.0, tol_fp32=0.0)
# the axes sweep runs on the GPU sets whose layouts differ (packing, storage)
FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]


def axes_sets(dims):
    """Every axes list ExpandDims takes on a ``dims``-D input (up to 4-D out), each as
    (axes, the same axes counted from the end)."""
    for n in range(1, 4 - dims + 1):
        outdims = dims + n
        for axes in itertools.combinations(range(outdims), n):
            yield list(axes), [a - outdims for a in axes]


SWEEP = [(shape, axes) for shape in SHAPES for pair in axes_sets(len(shape)) for axes in pair]


@pytest.mark.parametrize("shape,axes", SWEEP, ids=str)
@pytest.mark.parametrize("backend", backends("ExpandDims", grid=FAST))
def test_axes(shape, axes, backend):
    check(backend, "ExpandDims", {3: axes}, [], [randn(rng("expanddims", shape), shape)], **EXACT)


@pytest.mark.parametrize("params,shape", [({3: [0]}, (8, 5)), ({}, (3, 7, 13)), ({}, (8, 7, 13))], ids=str)
@pytest.mark.parametrize("backend", backends("ExpandDims"))
def test_full_grid(params, shape, backend):
    check(backend, "ExpandDims", params, [], [randn(rng("ed-g", shape), shape)], **EXACT)


@pytest.mark.parametrize("backend", backends("ExpandDims", grid=FAST))
def test_big(backend):
    check(backend, "ExpandDims", {3: [1]}, [], [randn(rng("ed-big"), (3, 227, 227))], **EXACT)


@pytest.mark.parametrize(
    "axes,shape", [([0, 0], (7,)), ([4], (7,)), ([0], (2, 3, 4, 5)), ([0, 1], (3, 4, 5)), ([-4], (7,))]
)
def test_bad_axes(axes, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("ExpandDims", {3: axes}, [], [randn(rng("ed-bad"), shape)])
    assert ret != 0 and "ExpandDims" in caplog.text


@pytest.mark.gpu
def test_bad_axes_on_the_gpu(caplog):
    x = randn(rng("ed-bad"), (3, 4, 5))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(make_param("ExpandDims", {3: [0, 1]}, [x.shape]), make_bin([]), [x])
    assert ret != 0 and "ExpandDims" in caplog.text


@pytest.mark.parametrize("params", [{0: 1, 1: 1, 2: 1}, {0: 1, 3: [0]}], ids=str)
@pytest.mark.parametrize("backend", backends("ExpandDims", grid=FAST))
def test_legacy_flags_are_ignored(params, backend):
    # ncnn dropped expand_w/h/c (params 0-2) in 2021; its ExpandDims reads only the axes
    check(backend, "ExpandDims", params, [], [randn(rng("ed-legacy"), (7, 13))], **EXACT)
