"""ShuffleChannel against the PyPI ncnn: every dividing group, reverse, 3-D and 4-D blobs with
channel counts that do and do not divide by 4 (packed on the GPU or not), the 1-D / 2-D
pass-through; channels that do not split into the groups rejected. One case list, every backend
(oracle.backends)."""

from __future__ import annotations

import logging

import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

# a pure copy: fp32 results are bit-exact everywhere
EXACT = dict(tol=0.0, tol_fp32=0.0)
# the group sweep is long: on the GPU it runs the sets whose layouts differ (packing, storage)
FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
SWEEP_SHAPES = [(1, 1, 1), (6, 7, 13), (12, 5, 5), (16, 8, 8), (6, 3, 5, 7), (4, 1, 6, 6), (8, 1, 6, 6)]
SWEEP = [
    (shape, {0: g, 1: reverse})
    for shape in SWEEP_SHAPES
    for g in range(1, shape[0] + 1)
    if shape[0] % g == 0
    for reverse in (0, 1)
]
CASES = [
    ((8, 5, 7), {0: 2}),
    ((12, 5, 7), {0: 3, 1: 1}),
    ((6, 7, 13), {}),
    ((7,), {0: 1}),
    ((8,), {0: 1}),
    ((7, 13), {0: 1, 1: 1}),
]


@pytest.mark.parametrize("shape,params", SWEEP, ids=str)
@pytest.mark.parametrize("backend", backends("ShuffleChannel", grid=FAST))
def test_groups(shape, params, backend):
    check(backend, "ShuffleChannel", params, [], [randn(rng("shufflechannel", shape), shape)], **EXACT)


@pytest.mark.parametrize("shape,params", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("ShuffleChannel"))
def test_defaults_and_low_ranks(shape, params, backend):
    check(backend, "ShuffleChannel", params, [], [randn(rng("sc", shape), shape)], **EXACT)


@pytest.mark.parametrize("backend", backends("ShuffleChannel", grid=FAST))
def test_big(backend):
    check(backend, "ShuffleChannel", {0: 3}, [], [randn(rng("sc-big"), (3, 227, 227))], **EXACT)


@pytest.mark.parametrize("params,shape", [({0: 4}, (6, 7, 13)), ({0: 2}, (7,)), ({0: 0}, (6, 7, 13))])
def test_bad_group(params, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("ShuffleChannel", params, [], [randn(rng("sc-bad"), shape)])
    assert ret != 0 and "ShuffleChannel" in caplog.text


@pytest.mark.gpu
def test_bad_group_on_the_gpu(caplog):
    x = randn(rng("sc-bad"), (6, 7, 13))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(make_param("ShuffleChannel", {0: 4}, [x.shape]), make_bin([]), [x])
    assert ret != 0 and "ShuffleChannel" in caplog.text
