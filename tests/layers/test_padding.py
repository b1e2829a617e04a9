"""Padding against the oracle: every side alone and together, constant / replicate / reflect,
the fill value, per-channel values from the weight blob, front/behind on channels (3-D, packed
and not) and depth (4-D), 1-D to 4-D; negative pads, bad types, too-long reflections and too few
per-channel values rejected. One case list, every backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

# a pure copy: results are bit-exact on the CPU and the fp32 GPU sets
EXACT = dict(tol=0.0, tol_fp32=0.0)
# the GPU sets whose layouts differ (packing, storage), for the sweeps; the short lists run on
# the whole grid
FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
SHAPES = [(1,), (7,), (8,), (64,), (1, 5), (7, 13), (8, 12), (16, 32), (1, 1, 1), (3, 7, 13), (8, 5, 7),
          (16, 8, 8), (2, 3, 5, 7), (4, 3, 6, 6)]  # fmt: skip
# (top, bottom, left, right, front, behind)
PADS = [(1, 0, 0, 0, 0, 0), (0, 2, 0, 0, 0, 0), (0, 0, 3, 0, 0, 0), (0, 0, 0, 1, 0, 0), (0, 0, 0, 0, 1, 0),
        (0, 0, 0, 0, 0, 2), (0, 0, 0, 0, 0, 4), (1, 2, 2, 1, 1, 1), (2, 1, 1, 3, 2, 0), (2, 1, 1, 3, 2, 2)]  # fmt: skip


# -- the case builders ---------------------------------------------------------------------------


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


# -- the cases ----------------------------------------------------------------------------------

# every shape, type and pads (reflect only where the pads fit)
SIDES = [(shape, ptype, pads) for shape in SHAPES for ptype in (0, 1, 2) for pads in PADS
         if ptype != 2 or fits_reflect(shape, pads)]  # fmt: skip


@pytest.mark.parametrize("shape,ptype,pads", SIDES, ids=str)
@pytest.mark.parametrize("backend", backends("Padding", grid=FAST))
def test_sides_and_types(shape, ptype, pads, backend):
    x = randn(rng("padding", shape), shape)
    check(backend, "Padding", pads_params(pads, ptype, -1.25), [], [x], **EXACT)


@pytest.mark.parametrize("ptype", (0, 1, 2))
@pytest.mark.parametrize("shape", [(8, 5, 7), (3, 7, 13), (4, 3, 6, 6)], ids=str)
@pytest.mark.parametrize("backend", backends("Padding"))
def test_every_side_at_once(shape, ptype, backend):
    x = randn(rng("padding-g", shape), shape)
    check(backend, "Padding", pads_params((1, 2, 2, 1, 2, 2), ptype, 0.5), [], [x], **EXACT)


@pytest.mark.parametrize(
    "shape,params", [((3, 7, 13), {}), ((8, 7, 13), {}), ((3, 7, 13), {0: 1, 3: 2})], ids=str
)
@pytest.mark.parametrize("backend", backends("Padding"))
def test_defaults_and_no_pads(shape, params, backend):
    # no pads copies the blob; the value defaults to 0
    check(backend, "Padding", params, [], [randn(rng("pad-d", shape), shape)], **EXACT)


@pytest.mark.parametrize("pads", PADS, ids=str)
@pytest.mark.parametrize("shape", [(3, 7, 13), (8, 5, 7), (1, 1, 1), (4, 3, 6, 6), (2, 3, 5, 7)], ids=str)
@pytest.mark.parametrize("backend", backends("Padding", grid=FAST))
def test_per_channel_values(shape, pads, backend):
    x = randn(rng("pad-pc", shape), shape)
    check(backend, "Padding", *per_channel_case(shape, pads), [x], **EXACT)


@pytest.mark.parametrize("backend", backends("Padding"))
def test_per_channel_values_ignored_by_other_types_and_ranks(backend):
    values = np.arange(1, 9, dtype=np.float32)
    x3 = randn(rng("pad-pc2"), (3, 7, 13))
    check(backend, "Padding", pads_params((1, 1, 1, 1, 1, 1), 1) | {6: 8}, [(values, 1)], [x3], **EXACT)
    x2 = randn(rng("pad-pc3"), (7, 13))
    check(backend, "Padding", pads_params((1, 1, 1, 1, 0, 0), 0, 2.5) | {6: 8}, [(values, 1)], [x2], **EXACT)


@pytest.mark.parametrize("ptype", (0, 1, 2))
@pytest.mark.parametrize("backend", backends("Padding", grid=FAST))
def test_big(ptype, backend):
    x = randn(rng("pad-big"), (3, 227, 227))
    check(backend, "Padding", pads_params((3, 3, 3, 3, 0, 0), ptype, 0.5), [], [x], **EXACT)


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


@pytest.mark.gpu
@pytest.mark.parametrize(
    "params,shape,weights",
    [
        ({2: 13, 4: 2}, (3, 7, 13), []),  # reflect as long as the row
        ({7: 8, 4: 2}, (8, 7, 13), []),  # reflect over 8 channels by 8
        ({7: 1, 6: 3}, (3, 7, 13), [(np.ones(3, np.float32), 1)]),  # 4 output channels, 3 values
    ],
)
def test_bad_on_the_gpu(params, shape, weights, caplog):
    x = randn(rng("pad-bad"), shape)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Padding", params, [shape]), make_bin(weights), [x], use_packing_layout=True
        )
    assert ret != 0 and "Padding" in caplog.text
