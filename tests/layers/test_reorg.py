"""Reorg against the PyPI ncnn: strides 1-4, both channel orders (mode 0 and 1), sizes that do
not divide by the stride, channel counts that pack and do not, 2-D input; too-small blobs and
bad params rejected. One case list, every backend (oracle.backends)."""

from __future__ import annotations

import logging

import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

# a pure copy: fp32 results are bit-exact everywhere
EXACT = dict(tol=0.0, tol_fp32=0.0)
# the stride x mode sweep runs on the GPU sets whose layouts differ (packing, storage)
FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
SWEEP = [
    (shape, {0: stride, 1: mode})
    for shape in [(1, 1, 1), (3, 7, 13), (16, 8, 8), (2, 12, 12), (5, 9, 6)]
    for stride in range(1, 5)
    if stride <= min(shape[1:])
    for mode in (0, 1)
]
CASES = [
    ((3, 7, 13), {}),
    ((8, 6, 10), {0: 2}),
    ((3, 7, 13), {0: 2, 1: 1}),
    ((7, 13), {0: 2}),
    ((8, 12), {0: 2, 1: 1}),
]


@pytest.mark.parametrize("shape,params", SWEEP, ids=str)
@pytest.mark.parametrize("backend", backends("Reorg", grid=FAST))
def test_strides_and_modes(shape, params, backend):
    check(backend, "Reorg", params, [], [randn(rng("reorg", shape), shape)], **EXACT)


@pytest.mark.parametrize("shape,params", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Reorg"))
def test_defaults_and_2d(shape, params, backend):
    check(backend, "Reorg", params, [], [randn(rng("reorg-c", shape), shape)], **EXACT)


@pytest.mark.parametrize("backend", backends("Reorg", grid=FAST))
def test_big(backend):
    check(backend, "Reorg", {0: 2, 1: 1}, [], [randn(rng("reorg-big"), (3, 227, 227))], **EXACT)


@pytest.mark.parametrize(
    "params,shape", [({0: 4}, (3, 3, 13)), ({0: 0}, (3, 7, 13)), ({0: 2, 1: 2}, (3, 8, 8)), ({0: 2}, (8,))]
)
def test_bad(params, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Reorg", params, [], [randn(rng("reorg-bad"), shape)])
    assert ret != 0 and "Reorg" in caplog.text


@pytest.mark.gpu
def test_too_small_on_the_gpu(caplog):
    x = randn(rng("reorg-bad"), (3, 3, 13))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(make_param("Reorg", {0: 4}, [x.shape]), make_bin([]), [x])
    assert ret != 0 and "Reorg" in caplog.text
