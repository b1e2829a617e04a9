"""Noop: blobs pass through unchanged, in place, whatever their number, in every storage type
and packing; one case list on every backend (oracle.backends)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import SHAPES_ALL, backends, check, randn, rng, run_layer

PATHS = ("layer", "inplace", "net")
EXACT = dict(tol=0.0, tol_fp32=0.0, paths=PATHS)


@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5)], ids=str)
@pytest.mark.parametrize("backend", backends("Noop"))
def test_noop(shape, backend):
    check(backend, "Noop", {}, [], [randn(rng("noop", shape), shape)], **EXACT)


@pytest.mark.parametrize("backend", backends("Noop"))
def test_noop_two_blobs(backend):
    g = rng("noop2")
    a, b = randn(g, (3, 4, 5)), randn(g, (6,))
    check(backend, "Noop", {}, [], [a, b], n_outputs=2, **EXACT)


def test_noop_returns_its_inputs():
    g = rng("noop2")
    a, b = randn(g, (3, 4, 5)), randn(g, (6,))
    ret, (ya, yb) = run_layer("Noop", {}, [], [a, b], n_outputs=2)
    assert ret == 0 and np.array_equal(ya, a) and np.array_equal(yb, b)


@pytest.mark.parametrize("backend", backends("Noop", cpu=False))
def test_noop_not_in_place(backend):
    shape = (8, 5, 7)
    check(backend, "Noop", {}, [], [randn(rng("noop-nl", shape), shape)], lightmode=False, **EXACT)


def test_noop_flags():
    from ncnn_c.layer import create_layer_cpu

    layer = create_layer_cpu("Noop")
    assert not layer.one_blob_only and layer.support_inplace
