"""Softmax on the GPU over the option grid, every axis of 1-D..4-D blobs, with outer axes
divisible by 4 (the packing sets then run the pack4 shader, along and across the packed
axis) and not (the pack1 shader)."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu

CASES = [((37,), 0), ((8, 11), 0), ((8, 11), 1), ((8, 7, 9), 0), ((8, 7, 9), 1), ((8, 7, 9), 2)]
CASES += [((4, 3, 5, 7), a) for a in range(4)] + [((1000, 1, 1), 0)]
CASES += [((36,), 0), ((12, 5), 0), ((12, 5), -1), ((3, 7, 13), 0), ((3, 7, 13), 2), ((8, 5, 7), -2)]
CASES += [((3, 2, 5, 7), a) for a in range(4)] + [((16, 57, 57), 0), ((16, 57, 57), 2)]
# lines longer than llvmpipe's 65535 loop iterations per invocation, pack1 and pack4
CASES += [((70001,), 0), ((70000,), 0)]


@pytest.mark.parametrize("shape,axis", CASES, ids=str)
def test_softmax_grid(shape, axis):
    check_layer_gpu("Softmax", {0: axis, 1: 1}, [], [randn(rng("softmax", shape), shape, 3.0)])
