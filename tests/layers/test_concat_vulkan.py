"""Concat on the GPU over the option grid: every axis of 1-D..4-D blobs."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu

CASES = [
    ([(8,), (4,)], 0),
    ([(3,), (5,)], 0),
    ([(8, 5), (4, 5)], 0),
    ([(8, 5), (8, 3)], 1),
    ([(8, 5, 7), (4, 5, 7)], 0),
    ([(3, 5, 7), (5, 5, 7)], 0),
    ([(8, 5, 7), (8, 2, 7)], 1),
    ([(8, 5, 7), (8, 5, 3)], 2),
    ([(4, 2, 3, 5), (4, 1, 3, 5)], 1),
    ([(4, 2, 3, 5), (8, 2, 3, 5)], 0),
    # one packed input and one not: unpacked first
    ([(8, 5, 7), (3, 5, 7)], 0),
    ([(8, 5), (3, 5)], 0),
    ([(3, 5, 7), (8, 5, 7), (4, 5, 7)], 0),
]


@pytest.mark.parametrize("shapes,axis", CASES, ids=str)
def test_concat_grid(shapes, axis):
    inputs = [randn(rng("concat", s, i), s) for i, s in enumerate(shapes)]
    check_layer_gpu("Concat", {0: axis}, [], inputs)
