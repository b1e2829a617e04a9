"""GridSample against the PyPI ncnn oracle: ncnn's test_gridsample forms — every sample_type x
padding_mode x align_corner on 3-D inputs, bilinear (trilinear) and nearest on 4-D inputs, the
permute_fusion grid layout — each on every backend (oracle.backends: the CPU and the GPU
option grid); bad params and grids, on the CPU and the GPU. Grids reach a little past
[-1, 1], so the padding modes matter. Bicubic rounds differently from ncnn's in the last
bits (rel L2 ~1e-6), within the 1e-5 bar."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import backends, check, make_param, randn, rng, run_layer, run_net_gpu

TOL = 1e-5


def _grid(key, shape):
    # locations fp16 holds exactly, so that an fp16 grid blob (the GPU's fp16 option sets)
    # samples where the fp32 oracle does: a nearest sample within a rounding of a cell
    # boundary would otherwise pick the other cell
    g = rng("gridsample-grid", key, shape).uniform(-1.2, 1.2, shape)
    return g.astype(np.float16).astype(np.float32)


@pytest.mark.parametrize("align", [0, 1], ids=["noalign", "align"])
@pytest.mark.parametrize("padding_mode", [1, 2, 3], ids=["zeros", "border", "reflection"])
@pytest.mark.parametrize("sample_type", [1, 2, 3], ids=["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("backend", backends("GridSample"))
def test_gridsample_2d(sample_type, padding_mode, align, backend):
    x = randn(rng("gridsample", 2), (3, 7, 9))
    grid = _grid(2, (5, 6, 2))
    check(backend, "GridSample", {0: sample_type, 1: padding_mode, 2: align}, [], [x, grid], tol=TOL)


@pytest.mark.parametrize("align", [0, 1], ids=["noalign", "align"])
@pytest.mark.parametrize("padding_mode", [1, 2, 3], ids=["zeros", "border", "reflection"])
@pytest.mark.parametrize("sample_type", [1, 2], ids=["bilinear", "nearest"])
@pytest.mark.parametrize("backend", backends("GridSample"))
def test_gridsample_3d(sample_type, padding_mode, align, backend):
    x = randn(rng("gridsample", 3), (2, 5, 6, 7))
    grid = _grid(3, (3, 4, 5, 3))
    check(backend, "GridSample", {0: sample_type, 1: padding_mode, 2: align}, [], [x, grid], tol=TOL)


@pytest.mark.parametrize(
    "shape,grid_shape", [((3, 7, 9), (2, 5, 6)), ((2, 5, 6, 7), (3, 3, 4, 5))], ids=["2d", "3d"]
)
@pytest.mark.parametrize("sample_type", [1, 2], ids=["bilinear", "nearest"])
@pytest.mark.parametrize("backend", backends("GridSample"))
def test_gridsample_permute_fusion(sample_type, shape, grid_shape, backend):
    x = randn(rng("gridsample-pf", shape), shape)
    check(backend, "GridSample", {0: sample_type, 1: 2, 3: 1}, [], [x, _grid("pf", grid_shape)], tol=TOL)


# one fp32 and one fp16 set keep lavapipe's time down (the small cases cover every set)
@pytest.mark.parametrize("backend", backends("GridSample", grid=["fp32", "fp16sa-pack"]))
def test_gridsample_large(backend):
    x = randn(rng("gridsample-large"), (16, 32, 48))
    check(backend, "GridSample", {0: 1, 1: 1}, [], [x, _grid("large", (24, 40, 2))], tol=TOL)


@pytest.mark.parametrize(
    "params,shapes,key",
    [
        ({0: 4}, [(2, 4, 4), (3, 3, 2)], "sample_type"),
        ({1: 0}, [(2, 4, 4), (3, 3, 2)], "padding_mode"),
        ({3: 2}, [(2, 4, 4), (3, 3, 2)], "permute_fusion"),
        ({}, [(2, 4, 4), (3, 3, 3)], "coordinates"),
        ({}, [(4, 4), (3, 2)], "3-D or 4-D"),
        ({0: 3}, [(2, 4, 4, 4), (3, 3, 3, 3)], "bicubic"),
    ],
    ids=str,
)
def test_gridsample_rejects(params, shapes, key, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("GridSample", params, [], [np.zeros(s, np.float32) for s in shapes])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "GridSample" in lines[0] and key in lines[0], lines


@pytest.mark.gpu
@pytest.mark.parametrize(
    "params,shapes,key",
    [
        ({}, [(2, 4, 4), (3, 3, 3)], "coordinates"),
        ({3: 1}, [(2, 4, 4), (3, 3, 3)], "coordinates"),
        ({0: 3}, [(2, 4, 4, 4), (3, 3, 3, 3)], "bicubic"),
    ],
    ids=str,
)
def test_gridsample_gpu_rejects(params, shapes, key, caplog):
    # the GPU forward refuses what the CPU one does, with the same logged reason
    inputs = [np.zeros(s, np.float32) for s in shapes]
    text = make_param("GridSample", params, shapes, 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, b"", inputs)
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("GridSample" in line and key in line for line in lines), lines


def _nonfinite_grid(points: int) -> np.ndarray:
    """Four rows of ``points`` (x, y) pairs, 30 % of the values NaN, +inf or -inf."""
    g = rng("gridsample-nonfinite", points)
    grid = g.uniform(-1.3, 1.3, (4, points, 2)).astype(np.float32)
    hit = g.random(grid.shape) < 0.3
    grid[hit] = g.choice(np.array([np.nan, np.inf, -np.inf], np.float32), int(hit.sum()))
    return grid


@pytest.mark.parametrize("align", [0, 1], ids=["noalign", "align"])
@pytest.mark.parametrize("padding_mode", [2, 3], ids=["border", "reflection"])
@pytest.mark.parametrize("sample_type", [1, 2], ids=["bilinear", "nearest"])
@pytest.mark.parametrize("backend", backends("GridSample", grid=["fp32"]))
def test_gridsample_nonfinite_grid(sample_type, padding_mode, align, backend):
    # ncnn's vector code, which takes rows of 8 points and more (16 here), clamps a NaN
    # coordinate to the first pixel under border and unaligned reflection padding (max_ps
    # takes its second operand, 0, for a NaN) and an inf to the first or last; aligned
    # reflection, which it does not clamp, leaves a NaN. ncnn_c follows that everywhere (ncnn's
    # scalar tail, the last points of a row shorter than 8, differs for reflection)
    x = randn(rng("gridsample-nonfinite-x"), (3, 5, 6))
    check(backend, "GridSample", {0: sample_type, 1: padding_mode, 2: align}, [], [x, _nonfinite_grid(16)])
