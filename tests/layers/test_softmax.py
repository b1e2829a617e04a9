"""Softmax against the PyPI ncnn: every axis (negative too) of 1-4 D blobs, in place and through
the net, outer axes divisible by 4 (the packed GPU shader, along and across the packed axis) and
not, lines longer than llvmpipe's loop limit, the fixbug0 guard, and axes out of range. One case
list, every backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, SPOT_GRID, backends, check, make_param, randn, rng, run_layer, run_ncnn

PATHS = ("layer", "inplace", "net")

CASES = [((37,), 0), ((8, 11), 0), ((8, 11), 1), ((8, 7, 9), 0), ((8, 7, 9), 1), ((8, 7, 9), 2)]
CASES += [((4, 3, 5, 7), a) for a in range(4)] + [((1000, 1, 1), 0)]
CASES += [((36,), 0), ((12, 5), 0), ((12, 5), -1), ((3, 7, 13), 0), ((3, 7, 13), 2), ((8, 5, 7), -2)]
CASES += [((3, 2, 5, 7), a) for a in range(4)] + [((16, 57, 57), 0), ((16, 57, 57), 2)]
# lines longer than llvmpipe's 65535 loop iterations per invocation, pack1 and pack4
CASES += [((70001,), 0), ((70000,), 0)]
# every axis of every rank: the long sweep, on the GPU grid's two ends
SWEEP_SHAPES = SHAPES_ALL + [(11,), (6, 9), (3, 5, 7), (2, 3, 5, 6)]
SWEEP = [(s, a) for s in SWEEP_SHAPES for a in range(-len(s), len(s))]


def _x(shape, scale=4.0):
    return randn(rng("softmax", shape), shape, scale)


@pytest.mark.parametrize("shape,axis", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Softmax"))
def test_softmax(shape, axis, backend):
    # scale 3: the 70001-long line's fp32 GPU sum order already costs 1e-4 at scale 4
    check(backend, "Softmax", {0: axis, 1: 1}, [], [_x(shape, 3.0)], paths=PATHS)


@pytest.mark.parametrize("shape,axis", SWEEP, ids=str)
@pytest.mark.parametrize("backend", backends("Softmax", grid=SPOT_GRID))
def test_every_axis(shape, axis, backend):
    check(backend, "Softmax", {0: axis, 1: 1}, [], [_x(shape)], paths=PATHS)


@pytest.mark.parametrize("shape", [(7,), (7, 13), (3, 7, 13), (2, 3, 5, 7)], ids=str)
@pytest.mark.parametrize("params", [{}, {0: 0, 1: 0}], ids=str)
@pytest.mark.parametrize("backend", backends("Softmax", grid=SPOT_GRID))
def test_defaults_axis0(shape, params, backend):
    check(backend, "Softmax", params, [], [_x(shape)], paths=PATHS)


@pytest.mark.parametrize("axis", [1, 2, 3, -2, -4])
@pytest.mark.parametrize("backend", backends("Softmax", grid=SPOT_GRID))
def test_1d_ignores_axis(axis, backend):
    """ncnn normalises a 1-D blob whole, whatever the axis."""
    x = randn(rng("softmax-1d"), (64,), 3.0)
    check(backend, "Softmax", {0: axis, 1: 1}, [], [x], paths=PATHS)


@pytest.mark.parametrize("shape,axis", [((8, 7, 9), 1), ((3, 7, 13), 2), ((37,), 0)], ids=str)
@pytest.mark.parametrize("backend", backends("Softmax", cpu=False))
def test_not_in_place(shape, axis, backend):
    check(backend, "Softmax", {0: axis, 1: 1}, [], [_x(shape)], lightmode=False)


# fp16 holds neither 1e30 nor its exp: the big values run on the CPU and the fp32 GPU sets
@pytest.mark.parametrize("backend", backends("Softmax", grid=["fp32", "fp32-pack"]))
def test_large_values_stay_finite(backend):
    x = np.array([1000.0, 999.0, -1000.0, 0.0], np.float32)
    check(backend, "Softmax", {}, [], [x], paths=PATHS)
    y = np.array([[88.0, 300.0, -300.0], [-1e30, 1e30, 0.0]], np.float32)
    check(backend, "Softmax", {0: 1, 1: 1}, [], [y], paths=PATHS)


def test_large_values_sum_to_one():
    y = np.array([[88.0, 300.0, -300.0], [-1e30, 1e30, 0.0]], np.float32)
    ret, out = run_layer("Softmax", {0: 1, 1: 1}, [], [y])
    assert ret == 0 and np.all(np.isfinite(out[0]))
    np.testing.assert_allclose(out[0].sum(axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("axis", [1, -1, 2])
def test_old_param_rejected_like_ncnn(axis, caplog):
    x = np.ones((2, 3, 4), np.float32)
    ref_ret, _ = run_ncnn(make_param("Softmax", {0: axis}, [x.shape]), b"", [x])
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Softmax", {0: axis}, [], [x])
    assert ref_ret != 0 and ret != 0
    assert "fixbug0" in caplog.text


@pytest.mark.parametrize("shape,axis", [((3, 4), 2), ((3, 4), -3), ((2, 3, 4), 3), ((2, 3, 4, 5), -5)])
def test_axis_out_of_range(shape, axis, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Softmax", {0: axis, 1: 1}, [], [np.ones(shape, np.float32)])
    assert ret != 0 and "out of range" in caplog.text


def test_flags():
    from ncnn_c.layer import create_layer_cpu

    layer = create_layer_cpu("Softmax")
    assert type(layer).__name__ == "Softmax" and layer.one_blob_only and layer.support_inplace
