"""Noop on the GPU: the blob passes through unchanged in every storage type and packing."""

from __future__ import annotations

import pytest
from oracle import SHAPES_ALL, check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5)], ids=str)
def test_noop_grid(shape):
    errs = check_layer_gpu("Noop", {}, [], [randn(rng("noop-vk", shape), shape)])
    assert errs["fp32"] == 0.0 and errs["fp32-pack"] == 0.0


def test_noop_not_in_place():
    shape = (8, 5, 7)
    check_layer_gpu("Noop", {}, [], [randn(rng("noop-nl", shape), shape)], lightmode=False)
