"""Noop: blobs pass through unchanged, in place, whatever their number."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer, randn, rng, run_layer


@pytest.mark.parametrize("shape", SHAPES_ALL)
def test_noop(shape):
    x = randn(rng("noop", shape), shape)
    check_layer("Noop", {}, [], [x], tol=0.0, paths=("layer", "inplace", "net"))


def test_noop_two_blobs():
    g = rng("noop2")
    a, b = randn(g, (3, 4, 5)), randn(g, (6,))
    check_layer("Noop", {}, [], [a, b], n_outputs=2, tol=0.0, paths=("layer", "inplace", "net"))
    ret, (ya, yb) = run_layer("Noop", {}, [], [a, b], n_outputs=2)
    assert ret == 0 and np.array_equal(ya, a) and np.array_equal(yb, b)


def test_noop_flags():
    from ncnn_c.layer import create_layer_cpu

    layer = create_layer_cpu("Noop")
    assert not layer.one_blob_only and layer.support_inplace
