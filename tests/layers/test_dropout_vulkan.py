"""Dropout (inference: a scale) on the GPU over the option grid."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", [(7,), (8,), (7, 13), (8, 3), (3, 7, 13), (8, 5, 7), (4, 2, 3, 5)], ids=str)
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_dropout_grid(shape, scale):
    check_layer_gpu("Dropout", {0: scale}, [], [randn(rng("dropout", shape), shape)])
