"""Permute on the GPU over the option grid: every order type of 2-D, 3-D and 4-D blobs."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]


@pytest.mark.parametrize("order", range(2))
@pytest.mark.parametrize("shape", [(8, 13), (7, 12)], ids=str)
def test_permute_2d(shape, order):
    check("Permute", {0: order}, [], [randn(rng("permute", shape), shape)])


@pytest.mark.parametrize("order", range(6))
@pytest.mark.parametrize("shape", [(8, 5, 7), (3, 7, 13), (6, 4, 8)], ids=str)
def test_permute_3d(shape, order):
    check("Permute", {0: order}, [], [randn(rng("permute", shape), shape)])


@pytest.mark.parametrize("order", range(24))
def test_permute_4d(order):
    shape = (4, 3, 8, 5)
    check("Permute", {0: order}, [], [randn(rng("permute", shape), shape)], grid=FAST)


@pytest.mark.parametrize("order", range(24))
def test_permute_4d_odd(order):
    shape = (3, 4, 2, 7)
    check("Permute", {0: order}, [], [randn(rng("permute", shape), shape)], grid=FAST)


def test_permute_1d_passes_through():
    check("Permute", {0: 1}, [], [randn(rng("permute", 9), (9,))])
