"""ReLU / leaky ReLU on the GPU over the option grid (fp32, fp16 storage, fp16 arithmetic,
packing on/off) against the PyPI ncnn CPU fp32 oracle; elempack 4 blobs go through the
same scalar shader."""

from __future__ import annotations

import pytest
from oracle import SHAPES_ALL, check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5)], ids=str)
@pytest.mark.parametrize("slope", [0.0, 0.1])
def test_relu_grid(shape, slope):
    check_layer_gpu("ReLU", {0: slope}, [], [randn(rng("relu", shape), shape)])


def test_relu_not_in_place():
    shape = (8, 5, 7)
    check_layer_gpu("ReLU", {0: 0.1}, [], [randn(rng("relu-nl", shape), shape)], lightmode=False)
