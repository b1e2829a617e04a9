"""Squeeze against the oracle: the w/h/d/c flags, the axes array (negative too), dims that are
not 1 staying, squeezing everything to a 1-element blob, every input rank, packed inputs and
outputs on the GPU. One case list, every backend (oracle.backends)."""

from __future__ import annotations

import itertools
import logging

import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

# a pure copy: results are bit-exact on the CPU and the fp32 GPU sets
EXACT = dict(tol=0, tol_fp32=0)
# the GPU sets whose layouts differ (packing, storage), for the sweeps; the few other cases run
# on the whole grid
FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
FLAGS = (0, 1, 11, 2)

# the GPU's main run takes these shapes (packable dims that stay, and ones that go); the others
# run on the GPU in the slow job only
SHAPES = [(8, 1), (1, 8, 1), (3, 1, 13), (8, 1, 5), (1, 4, 1, 7)]
MORE_SHAPES = [(1,), (7,), (8,), (1, 5), (7, 1), (1, 1), (1, 7, 1), (4, 1, 1), (1, 1, 1), (1, 3, 1, 7),
               (2, 1, 1, 1), (8, 1, 1, 1), (1, 1, 1, 1)]  # fmt: skip


def _flag_cases(shapes):
    return [
        (shape, {k: 1 for k, b in zip(FLAGS, bits, strict=True) if b})
        for shape in shapes
        for bits in itertools.product((0, 1), repeat=4)
    ]


def _axes_cases(shapes):
    out = []
    for shape in shapes:
        dims = len(shape)
        for n in range(1, dims + 1):
            for axes in itertools.combinations(range(dims), n):
                out += [(shape, {3: list(axes)}), (shape, {3: [a - dims for a in axes]})]
    return out


OTHER_CASES = [
    ((1, 1, 5), {0: 1, 1: 1, 2: 1, 3: [0]}),  # the axes win over the flags
    ((8, 1, 13), {1: 1}),
    ((1, 227, 227), {2: 1}),
]


def _check(backend, shape, params):
    check(backend, "Squeeze", params, [], [randn(rng("squeeze", shape), shape)], **EXACT)


@pytest.mark.parametrize("shape,params", _flag_cases(SHAPES) + _axes_cases(SHAPES), ids=str)
@pytest.mark.parametrize("backend", backends("Squeeze", grid=FAST))
def test_squeeze(shape, params, backend):
    _check(backend, shape, params)


@pytest.mark.parametrize("shape,params", OTHER_CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Squeeze"))
def test_squeeze_full_grid(shape, params, backend):
    _check(backend, shape, params)


@pytest.mark.parametrize("shape,params", _flag_cases(MORE_SHAPES) + _axes_cases(MORE_SHAPES), ids=str)
@pytest.mark.parametrize("backend", backends("Squeeze", grid=FAST, slow_gpu=True))
def test_squeeze_more_shapes(shape, params, backend):
    _check(backend, shape, params)


def test_bad_axis(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Squeeze", {3: [3]}, [], [randn(rng("sq-bad"), (1, 1, 5))])
    assert ret != 0 and "Squeeze" in caplog.text


@pytest.mark.gpu
def test_bad_axis_on_the_gpu(caplog):
    x = randn(rng("sq-bad"), (1, 1, 5))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(make_param("Squeeze", {3: [3]}, [x.shape]), make_bin([]), [x])
    assert ret != 0 and "Squeeze" in caplog.text
