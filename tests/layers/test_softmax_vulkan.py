"""Softmax on the GPU over the option grid, every axis of 1-D..4-D blobs. Softmax does not
pack: the net unpacks a packed blob before it (the grid's packing sets cover that)."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu

CASES = [((37,), 0), ((8, 11), 0), ((8, 11), 1), ((8, 7, 9), 0), ((8, 7, 9), 1), ((8, 7, 9), 2)]
CASES += [((4, 3, 5, 7), a) for a in range(4)] + [((1000, 1, 1), 0)]


@pytest.mark.parametrize("shape,axis", CASES, ids=str)
def test_softmax_grid(shape, axis):
    check_layer_gpu("Softmax", {0: axis, 1: 1}, [], [randn(rng("softmax", shape), shape, 3.0)])
