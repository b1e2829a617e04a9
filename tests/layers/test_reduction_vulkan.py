"""Reduction on the GPU over the option grid: every operation over every subset of axes of
1-4 D blobs, with and without keepdims, reduce_all, coeff, negative axes, packed producers."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from oracle import GPU_GRID, check_layer_gpu, make_param, randn, rng, run_net_gpu

pytestmark = pytest.mark.gpu

OPS = range(11)
PROD, LOGSUM = 6, 9
SHAPES = [(7,), (7, 13), (3, 7, 13), (8, 5, 7), (2, 3, 5, 7)]


def _input(op, shape, key=""):
    g = rng("reduction-vk", op, shape, key)
    if op == PROD:
        return (1 + 0.1 * randn(g, shape)).astype(np.float32)
    if op == LOGSUM:
        return np.abs(randn(g, shape)) + np.float32(0.1)
    return randn(g, shape)


def _subsets(dims):
    return [list(s) for n in range(1, dims + 1) for s in itertools.combinations(range(dims), n)]


@pytest.mark.parametrize("op", OPS)
def test_some_axes(op):
    for shape, axes in [((7, 13), [1]), ((8, 5, 7), [0]), ((3, 7, 13), [1, 2]), ((2, 3, 5, 7), [0, 2])]:
        x = _input(op, shape, "some")
        check_layer_gpu(
            "Reduction", {0: op, 1: 0, 3: axes, 4: op % 2, 5: 1}, [], [x], grid=["fp32", "fp16s-pack"]
        )


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_axes_subset(op, shape):
    x = _input(op, shape)
    for axes in _subsets(len(shape)):
        for keepdims in (0, 1):
            # the packed sets differ only in the net unpacking first: one fp32 and one fp16 pair
            grid = ["fp32", "fp16sa-pack"] if keepdims else ["fp32-pack", "fp16s"]
            check_layer_gpu("Reduction", {0: op, 1: 0, 3: axes, 4: keepdims, 5: 1}, [], [x], grid=grid)


@pytest.mark.parametrize("op", OPS)
def test_reduce_all_and_coeff(op):
    for shape in [(1,), (64,), (16, 32), (1, 1, 1), (16, 8, 8), (4, 1, 6, 6)]:
        x = _input(op, shape, "all")
        check_layer_gpu("Reduction", {0: op, 4: 1}, [], [x], grid=["fp32-pack", "fp16sa"])
        check_layer_gpu("Reduction", {0: op, 1: 1, 2: -0.75, 4: 0}, [], [x], grid=["fp32", "fp16pa-pack"])


def test_negative_axes_and_big_blob():
    x = _input(0, (8, 5, 7), "neg")
    check_layer_gpu("Reduction", {0: 3, 1: 0, 2: 2.0, 3: [-1, 0], 4: 0, 5: 1}, [], [x])
    big = _input(3, (16, 57, 57), "big")
    check_layer_gpu(
        "Reduction", {0: 3, 1: 0, 3: [1, 2], 4: 1, 5: 1}, [], [big], grid=["fp32-pack", "fp16s-pack"]
    )
    check_layer_gpu(
        "Reduction", {0: 8, 1: 0, 3: [0], 4: 0, 5: 1}, [], [big], grid=["fp32-pack", "fp16s-pack"]
    )


def test_bad_axis_fails(caplog):
    x = np.ones((8, 5, 7), np.float32)
    param = make_param("Reduction", {0: 0, 1: 0, 3: [5], 5: 1}, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, b"", [x], 1, **GPU_GRID["fp32-pack"])
    assert ret != 0
    assert "out of range" in caplog.text
