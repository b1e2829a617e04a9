"""Eltwise on the GPU over the option grid: product, sum (plain and weighted) and max of 2-5
blobs, every rank, packed and not, and inputs of one shape in different packings."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import GPU_GRID, SHAPES_ALL, check_layer_gpu, make_bin, randn, rng, run_net_gpu

pytestmark = pytest.mark.gpu

# the sweeps run two option sets by default and the whole grid in the slow run
GRIDS = [
    pytest.param(["fp32", "fp16sa-pack"], id="fast"),
    pytest.param(None, id="full", marks=pytest.mark.slow),
]


def _inputs(n, shape, key):
    g = rng("eltwise-vk", n, shape, key)
    return [randn(g, shape) for _ in range(n)]


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("op", [0, 1, 2])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_ops(op, n, grid):
    shapes = SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5)]
    for shape in shapes if grid is None else [(7,), (8, 13), (3, 7, 13), (8, 5, 7), (4, 2, 3, 5)]:
        check_layer_gpu("Eltwise", {0: op}, [], _inputs(n, shape, op), grid=grid)


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("n", [2, 3, 5])
def test_weighted_sum(n, grid):
    coeffs = [0.5, -1.25, 2.0, 0.0, -0.75][:n]
    for shape in [(7,), (8, 13), (3, 7, 13), (8, 5, 7), (2, 3, 5, 7)]:
        check_layer_gpu("Eltwise", {0: 1, 1: coeffs}, [], _inputs(n, shape, "w"), grid=grid)


def test_coeffs_ignored_by_other_ops():
    xs = _inputs(2, (8, 7, 13), "extra")
    check_layer_gpu("Eltwise", {0: 1, 1: [2.0, -1.0, 5.0]}, [], xs)
    check_layer_gpu("Eltwise", {0: 0, 1: [2.0, -1.0]}, [], xs)
    check_layer_gpu("Eltwise", {0: 2, 1: [2.0, -1.0]}, [], xs)


def test_big_blob():
    check_layer_gpu("Eltwise", {0: 1}, [], _inputs(2, (16, 57, 57), "big"), grid=["fp32-pack", "fp16s-pack"])


# a 1x1 identity Convolution (which does not pack) makes one input elempack 1 while the
# other, straight from an Input, is elempack 4
MIXED = """7767517
4 4
Input in0 0 1 in0 0=7 1=5 2=8
Input in1 0 1 in1 0=7 1=5 2=8
Convolution conv 1 1 in1 c1 0=8 1=1 6=64
Eltwise op 2 1 in0 c1 out0 0=1 -23301=2,0.5,2.0
"""


@pytest.mark.parametrize("name", ["fp32-pack", "fp16s-pack", "fp16pa-pack"])
def test_mixed_packing(name):
    a, b = _inputs(2, (8, 5, 7), "mixed")
    ret, got = run_net_gpu(MIXED, make_bin([(np.eye(8, dtype=np.float32), 0)]), [a, b], 1, **GPU_GRID[name])
    assert ret == 0
    ref = 0.5 * a + 2.0 * b
    tol = 1e-5 if name == "fp32-pack" else 1e-2
    assert np.linalg.norm(got[0] - ref) / np.linalg.norm(ref) <= tol


def test_bad_inputs(caplog):
    from oracle import make_param

    a = np.ones((8, 3, 4), np.float32)
    for inputs, params, text in [
        ([a, np.ones((8, 3, 5), np.float32)], {0: 1}, "shapes differ"),
        ([a, a, a], {0: 1, 1: [1.0, 2.0]}, "coeffs"),
    ]:
        caplog.clear()
        param = make_param("Eltwise", params, [x.shape for x in inputs], 1)
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            ret, _ = run_net_gpu(param, b"", inputs, 1, **GPU_GRID["fp32-pack"])
        assert ret != 0
        assert text in caplog.text
