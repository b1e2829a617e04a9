"""ShuffleChannel against the oracle: groups 1..channels, reverse, 3-D and 4-D blobs, the
1-channel ranks; channels that do not split into the groups rejected."""

from __future__ import annotations

import logging

import pytest
from oracle import check_layer, randn, rng, run_layer


@pytest.mark.parametrize("shape", [(1, 1, 1), (6, 7, 13), (12, 5, 5), (16, 8, 8), (6, 3, 5, 7), (4, 1, 6, 6)])
def test_groups(shape):
    x = randn(rng("shufflechannel", shape), shape)
    c = shape[0]
    for g in (d for d in range(1, c + 1) if c % d == 0):
        for reverse in (0, 1):
            check_layer("ShuffleChannel", {0: g, 1: reverse}, [], [x], tol=0)


def test_defaults_and_low_ranks():
    check_layer("ShuffleChannel", {}, [], [randn(rng("sc-d"), (6, 7, 13))], tol=0)
    check_layer("ShuffleChannel", {0: 1}, [], [randn(rng("sc-1"), (7,))], tol=0)
    check_layer("ShuffleChannel", {0: 1, 1: 1}, [], [randn(rng("sc-2"), (7, 13))], tol=0)


def test_big():
    check_layer("ShuffleChannel", {0: 3}, [], [randn(rng("sc-big"), (3, 227, 227))], tol=0)


@pytest.mark.parametrize("params,shape", [({0: 4}, (6, 7, 13)), ({0: 2}, (7,)), ({0: 0}, (6, 7, 13))])
def test_bad_group(params, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("ShuffleChannel", params, [], [randn(rng("sc-bad"), shape)])
    assert ret != 0 and "ShuffleChannel" in caplog.text
