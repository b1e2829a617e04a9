"""Softmax against the oracle: every axis (negative too) of 1-4 D blobs, in place and through
the net, the fixbug0 guard, and axes out of range."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, make_param, randn, rng, run_layer, run_ncnn

PATHS = ("layer", "inplace", "net")


@pytest.mark.parametrize("shape", SHAPES_ALL, ids=str)
def test_every_axis(shape):
    dims = len(shape)
    x = randn(rng("softmax", shape), shape, 4.0)
    for axis in range(-dims, dims):
        check_layer("Softmax", {0: axis, 1: 1}, [], [x], paths=PATHS)


def test_defaults_axis0():
    for shape in [(7,), (7, 13), (3, 7, 13), (2, 3, 5, 7)]:
        x = randn(rng("softmax-default", shape), shape, 4.0)
        check_layer("Softmax", {}, [], [x], paths=PATHS)
        check_layer("Softmax", {0: 0, 1: 0}, [], [x], paths=PATHS)


def test_1d_ignores_axis():
    """ncnn normalises a 1-D blob whole, whatever the axis."""
    x = randn(rng("softmax-1d"), (64,), 3.0)
    for axis in (1, 2, 3, -2, -4):
        check_layer("Softmax", {0: axis, 1: 1}, [], [x], paths=PATHS)


def test_large_values_stay_finite():
    x = np.array([1000.0, 999.0, -1000.0, 0.0], np.float32)
    check_layer("Softmax", {}, [], [x], paths=PATHS)
    y = np.array([[88.0, 300.0, -300.0], [-1e30, 1e30, 0.0]], np.float32)
    check_layer("Softmax", {0: 1, 1: 1}, [], [y], paths=PATHS)
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
