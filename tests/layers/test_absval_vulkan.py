"""AbsVal on the GPU over the option grid (the worked example of docs/gpu-layers.md)."""

from __future__ import annotations

import pytest
from oracle import SHAPES_ALL, check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5)], ids=str)
def test_absval_grid(shape):
    check_layer_gpu("AbsVal", {}, [], [randn(rng("absval", shape), shape)])
