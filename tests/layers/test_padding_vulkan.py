"""Padding on the GPU over the option grid: every side alone and together, constant /
replicate / reflect, per-channel values, front/behind on channels (3-D, packed and not) and
depth (4-D), 1-D to 4-D; too-long reflections and too few per-channel values refused. The
case builders are test_padding.py's; the pads lists differ (deeper front/behind here)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu
from test_padding import fits_reflect, pads_params, per_channel_case

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
# the default run keeps one shape per rank (and packed / unpacked channels); the rest are slow
FAST_SHAPES = [(7,), (8, 12), (3, 7, 13), (8, 5, 7), (4, 3, 6, 6)]
SLOW_SHAPES = [(1,), (8,), (1, 5), (7, 13), (1, 1, 1), (2, 3, 5, 7)]
SHAPES = FAST_SHAPES + [pytest.param(s, marks=pytest.mark.slow, id=str(s)) for s in SLOW_SHAPES]
# (top, bottom, left, right, front, behind)
PADS = [(1, 0, 0, 0, 0, 0), (0, 2, 0, 0, 0, 0), (0, 0, 3, 0, 0, 0), (0, 0, 0, 1, 0, 0),
        (0, 0, 0, 0, 1, 0), (0, 0, 0, 0, 0, 4), (1, 2, 2, 1, 1, 1), (2, 1, 1, 3, 2, 2)]  # fmt: skip


@pytest.mark.parametrize("ptype", (0, 1, 2))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sides_and_types(shape, ptype):
    x = randn(rng("padding", shape), shape)
    for pads in PADS:
        if ptype == 2 and not fits_reflect(shape, pads):
            continue
        check("Padding", pads_params(pads, ptype, -1.25), [], [x], grid=FAST)


@pytest.mark.parametrize("shape", [(8, 5, 7), (3, 7, 13), (4, 3, 6, 6)], ids=str)
def test_full_grid(shape):
    x = randn(rng("padding-g", shape), shape)
    for ptype in (0, 1, 2):
        check("Padding", pads_params((1, 2, 2, 1, 2, 2), ptype, 0.5), [], [x])


@pytest.mark.parametrize("shape", [(3, 7, 13), (8, 5, 7), (1, 1, 1), (4, 3, 6, 6), (2, 3, 5, 7)], ids=str)
def test_per_channel_values(shape):
    x = randn(rng("pad-pc", shape), shape)
    for pads in PADS:
        check("Padding", *per_channel_case(shape, pads), [x], grid=FAST)


def test_per_channel_values_ignored_by_other_types_and_ranks():
    values = np.arange(1, 9, dtype=np.float32)
    x3 = randn(rng("pad-pc2"), (3, 7, 13))
    check("Padding", pads_params((1, 1, 1, 1, 1, 1), 1) | {6: 8}, [(values, 1)], [x3])
    x2 = randn(rng("pad-pc3"), (7, 13))
    check("Padding", pads_params((1, 1, 1, 1, 0, 0), 0, 2.5) | {6: 8}, [(values, 1)], [x2])


def test_no_pads_and_big():
    check("Padding", {}, [], [randn(rng("pad-d"), (8, 7, 13))])
    x = randn(rng("pad-big"), (3, 227, 227))
    for ptype in (0, 1, 2):
        check("Padding", pads_params((3, 3, 3, 3, 0, 0), ptype, 0.5), [], [x], grid=FAST)


@pytest.mark.parametrize(
    "params,shape,weights",
    [
        ({2: 13, 4: 2}, (3, 7, 13), []),  # reflect as long as the row
        ({7: 8, 4: 2}, (8, 7, 13), []),  # reflect over 8 channels by 8
        ({7: 1, 6: 3}, (3, 7, 13), [(np.ones(3, np.float32), 1)]),  # 4 output channels, 3 values
    ],
)
def test_bad(params, shape, weights, caplog):
    x = randn(rng("pad-bad"), shape)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Padding", params, [shape]), make_bin(weights), [x], use_packing_layout=True
        )
    assert ret != 0 and "Padding" in caplog.text
