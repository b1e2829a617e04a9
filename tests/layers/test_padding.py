"""Padding against the oracle: every side alone and together, constant / replicate / reflect,
the fill value, per-channel values from the weight blob, front/behind on channels (3-D) and
depth (4-D), 1-D to 4-D; negative pads, bad types and too-long reflections rejected."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

SHAPES = [
    (1,),
    (7,),
    (64,),
    (1, 5),
    (7, 13),
    (16, 32),
    (1, 1, 1),
    (3, 7, 13),
    (16, 8, 8),
    (2, 3, 5, 7),
    (4, 3, 6, 6),
]
# (top, bottom, left, right, front, behind)
PADS = [(1, 0, 0, 0, 0, 0), (0, 2, 0, 0, 0, 0), (0, 0, 3, 0, 0, 0), (0, 0, 0, 1, 0, 0),
        (0, 0, 0, 0, 1, 0), (0, 0, 0, 0, 0, 2), (1, 2, 2, 1, 1, 1), (2, 1, 1, 3, 2, 0)]  # fmt: skip


# -- the case builders, shared with test_padding_vulkan.py ---------------------------------------


def pads_params(pads, ptype, value=0.0):
    """Padding params for (top, bottom, left, right, front, behind) pads of type ``ptype``."""
    p = dict(zip((0, 1, 2, 3, 7, 8), pads, strict=True))
    return {k: v for k, v in p.items() if v} | {4: ptype, 5: value}


def fits_reflect(shape, pads):
    """Whether reflect padding can take these pads: each under its axis' length."""
    t, b, left, r, f, bh = pads
    axes = {
        1: [(left, r)],
        2: [(t, b), (left, r)],
        3: [(f, bh), (t, b), (left, r)],
        4: [(0, 0), (f, bh), (t, b), (left, r)],
    }
    return all(max(p) < n for p, n in zip(axes[len(shape)], shape, strict=True) if max(p))


def per_channel_case(shape, pads):
    """(params, weights) of constant padding with one value per output channel (3-D: front
    and behind pads add channels) and a fill value the values override."""
    nvalues = shape[0] + (pads[4] + pads[5] if len(shape) == 3 else 0)
    values = np.arange(1, nvalues + 1, dtype=np.float32) * np.float32(-0.5)
    return pads_params(pads, 0, 9.0) | {6: nvalues}, [(values, 1)]


# -- the CPU tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("ptype", (0, 1, 2))
def test_sides_and_types(shape, ptype):
    x = randn(rng("padding", shape), shape)
    for pads in PADS:
        if ptype == 2 and not fits_reflect(shape, pads):
            continue
        check_layer("Padding", pads_params(pads, ptype, -1.25), [], [x], tol=0)


def test_defaults_and_no_pads():
    x = randn(rng("pad-d"), (3, 7, 13))
    check_layer("Padding", {}, [], [x], tol=0)
    check_layer("Padding", {0: 1, 3: 2}, [], [x], tol=0)  # value defaults to 0


@pytest.mark.parametrize("shape", [(3, 7, 13), (1, 1, 1), (4, 3, 6, 6), (2, 3, 5, 7)])
def test_per_channel_values(shape):
    x = randn(rng("pad-pc", shape), shape)
    for pads in PADS:
        check_layer("Padding", *per_channel_case(shape, pads), [x], tol=0)


def test_per_channel_values_ignored_by_other_types_and_ranks():
    values = np.arange(1, 9, dtype=np.float32)
    x3 = randn(rng("pad-pc2"), (3, 7, 13))
    check_layer("Padding", pads_params((1, 1, 1, 1, 1, 1), 1) | {6: 8}, [(values, 1)], [x3], tol=0)
    x2 = randn(rng("pad-pc3"), (7, 13))
    check_layer("Padding", pads_params((1, 1, 1, 1, 0, 0), 0, 2.5) | {6: 8}, [(values, 1)], [x2], tol=0)


def test_big():
    x = randn(rng("pad-big"), (3, 227, 227))
    for ptype in (0, 1, 2):
        check_layer("Padding", pads_params((3, 3, 3, 3, 0, 0), ptype, 0.5), [], [x], tol=0)


@pytest.mark.parametrize(
    "params,shape,weights",
    [
        ({0: -1}, (3, 7, 13), []),
        ({2: 1, 4: 3}, (3, 7, 13), []),
        ({2: 13, 4: 2}, (3, 7, 13), []),  # reflect as long as the row
        ({7: 3, 4: 2}, (3, 7, 13), []),  # reflect over 3 channels by 3
        ({2: 1, 4: 2}, (1,), []),
        ({7: 1, 6: 3}, (3, 7, 13), [(np.ones(3, np.float32), 1)]),  # 4 output channels, 3 values
    ],
)
def test_bad(params, shape, weights, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Padding", params, weights, [randn(rng("pad-bad"), shape)])
    assert ret != 0 and "Padding" in caplog.text
