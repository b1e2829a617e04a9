"""Reshape against the oracle: every output rank, 0 (copy the input's dim) and -1 (the rest),
the -233 rank cut, the ignored permute flag, every input rank, elempack 4 <-> 1 changes both ways
on the GPU, an unchanged shape, and bad shapes rejected. One case list, every backend
(oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

# a pure copy: results are bit-exact on the CPU and the fp32 GPU sets
EXACT = dict(tol=0, tol_fp32=0)


def _x(shape):
    return randn(rng("reshape", shape), shape)


# output params (ncnn names) for every output rank, each resolving for a 24-element input
CASES_24 = [
    {0: 24},
    {0: -1},
    {0: 6, 1: 4},
    {0: -1, 1: 2},
    {0: 8, 1: -1},
    {0: 2, 1: 3, 2: 4},
    {0: -1, 1: 3, 2: 2},
    {0: 4, 1: -1, 2: 3},
    {0: 4, 1: 3, 2: -1},
    {0: 0, 1: 0, 2: -1},  # w and h copied from the input
    {0: 0, 1: -1, 2: 0},
    {0: 2, 1: 2, 11: 3, 2: 2},
    {0: -1, 1: 2, 11: 3, 2: 2},
    {0: 2, 1: 2, 11: -1, 2: 2},
    {0: 2, 1: 2, 11: 3, 2: -1},
    {0: 0, 1: 0, 11: 1, 2: 0},  # 3-D to 4-D keeping w, h, c
    {0: 4, 1: 6, 2: 1, 3: 1},  # permute flag: ignored by current ncnn
    {0: 24, 1: -233, 2: 5},  # h unset: the rank stops at 1, c is never read
    {0: 6, 1: 4, 2: -233, 11: 7},  # c unset: 2-D, d not read
]
# 48 elements: outer axes of 4, 8, 12 (pack4 on the GPU) and 3, 6 (pack1)
CASES_48 = [
    {0: 48},
    {0: -1, 1: 4},
    {0: 16, 1: 3},
    {0: 4, 1: 3, 2: 4},
    {0: -1, 1: 2, 2: 3},
    {0: 0, 1: 0, 2: -1},
    {0: 2, 1: 2, 11: 3, 2: 4},
    {0: 2, 1: -1, 11: 2, 2: 3},
    {0: 4, 1: 12, 2: 1, 3: 1},  # permute flag: ignored
    {0: 48, 1: -233, 2: 5},
    {0: 12, 1: 4, 2: -233, 11: 7},
]


def _every_rank_forms(shape):
    """Flat, one long row, one long column, 4-D of one; and rows of 4 where they fit."""
    n = int(np.prod(shape))
    forms = [{0: -1}, {0: n, 1: 1}, {0: 1, 1: -1, 2: 1}, {0: -1, 1: 1, 11: 1, 2: 1}]
    return forms + ([{0: n // 4, 1: 4}, {0: n // 4, 1: 1, 2: 4}] if n % 4 == 0 else [])


# the GPU sets whose layouts differ (packing, storage): what the 24- and 48-element lists, the
# 4-D zeros and the big blob run on; the every-rank forms run on the whole grid
FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
CASES = (
    [((2, 3, 4), params) for params in CASES_24]
    + [
        (shape, params)
        for shape in [(4, 3, 4), (3, 4, 4), (12, 4), (48,), (2, 4, 2, 3)]
        for params in CASES_48
    ]
    + [
        ((2, 3, 5, 7), {0: 0, 1: 0, 11: 0, 2: 0}),  # 0 copies the named dims of a 4-D input
        ((2, 3, 5, 7), {0: 0, 1: -1, 11: 1, 2: 0}),
        ((2, 3, 5, 7), {0: 0, 1: -1}),
        ((2, 3, 5, 7), {0: 21, 1: 0, 2: 2}),  # h=0 copies the 4-D input's h
        ((3, 227, 227), {0: 227, 1: 681}),
        ((3, 227, 227), {0: -1, 1: 227, 11: 3, 2: 1}),
    ]
)
EVERY_RANK = [
    (shape, params) for shape in SHAPES_ALL + [(8, 5, 7)] for params in _every_rank_forms(shape)
] + [
    ((8, 5, 7), {0: 0, 1: 0, 2: 0})  # unchanged
]


@pytest.mark.parametrize("shape,params", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Reshape", grid=FAST))
def test_reshape(shape, params, backend):
    check(backend, "Reshape", params, [], [_x(shape)], **EXACT)


@pytest.mark.parametrize("shape,params", EVERY_RANK, ids=str)
@pytest.mark.parametrize("backend", backends("Reshape"))
def test_every_input_rank(shape, params, backend):
    check(backend, "Reshape", params, [], [_x(shape)], **EXACT)


def test_output_is_usable_after_input_changes():
    # the shared storage must carry the data: extract after the layer object is gone
    x = _x((4, 6, 6))
    ret, out = run_layer("Reshape", {0: 36, 1: 4}, [], [x])
    assert ret == 0
    np.testing.assert_array_equal(out[0], x.reshape(4, 36))


@pytest.mark.parametrize(
    "params,shape",
    [
        ({0: 5, 1: 5}, (2, 3, 4)),  # 25 != 24
        ({0: -1, 1: 5}, (2, 3, 4)),  # 24 not divisible by 5
        ({0: -1, 1: -1}, (2, 3, 4)),  # two unknowns
        ({0: -5}, (2, 3, 4)),
        ({}, (2, 3, 4)),  # no output shape at all
    ],
)
def test_bad_shapes_rejected(params, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Reshape", params, [], [_x(shape)])
    assert ret != 0
    assert "Reshape" in caplog.text or "reshape" in caplog.text


@pytest.mark.gpu
@pytest.mark.parametrize("params", [{0: 5, 1: 5}, {0: -1, 1: 5}])
def test_bad_shapes_on_the_gpu(params, caplog):
    x = _x((2, 3, 4))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Reshape", params, [x.shape]), make_bin([]), [x], use_packing_layout=True
        )
    assert ret != 0 and "Reshape" in caplog.text
