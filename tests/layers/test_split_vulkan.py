"""Split on the GPU over the option grid (tops share the bottom's buffer)."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", [(7,), (8, 5), (5, 7, 9), (8, 7, 9), (4, 2, 3, 5)], ids=str)
@pytest.mark.parametrize("n", [1, 3])
def test_split_grid(shape, n):
    check_layer_gpu("Split", {}, [], [randn(rng("split", shape), shape)], n_outputs=n)
