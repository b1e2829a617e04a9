"""Convolution on the GPU over the option grid: geometries, pads, activations, fp16 weights."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu

GEOMETRIES = [
    {1: 1},
    {1: 1, 3: 2},
    {1: 3, 3: 2},
    {1: 3, 4: 1},
    {1: 3, 2: 2, 4: 2},
    {1: 3, 3: 2, 4: -233},
    {1: 4, 3: 2, 4: -234, 18: 0.25},
]
ACTS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.8], 4: None, 5: None, 6: [0.2, 0.5]}


def _case(geometry, act, shape, num_output, fp16_weights=False):
    g = rng("conv", str(geometry), act, shape, num_output)
    k = geometry.get(1, 1)
    params = {**geometry, 0: num_output, 5: 1, 6: k * k * shape[0] * num_output}
    if act:
        params[9] = act
        if ACTS[act]:
            params[10] = ACTS[act]
    w = randn(g, params[6], 0.3)
    weights = [(w, "fp16") if fp16_weights else w, (randn(g, num_output), 1)]
    check_layer_gpu("Convolution", params, weights, [randn(g, shape)])


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape,num_output", [((3, 11, 13), 7), ((8, 9, 9), 8)], ids=str)
def test_convolution_grid(geometry, shape, num_output):
    _case(geometry, 0, shape, num_output)


@pytest.mark.parametrize("act", range(1, 7))
def test_convolution_activation_grid(act):
    _case({1: 3, 4: 1}, act, (4, 9, 11), 8)


def test_convolution_fp16_weights_grid():
    _case({1: 3, 4: 1}, 1, (8, 9, 11), 16, fp16_weights=True)


def test_convolution_deep_fp16_accumulation():
    """512 x 3x3 taps per output: fp16 arithmetic accumulation must still meet 1e-2."""
    _case({1: 3, 4: 1}, 0, (512, 6, 6), 8)
    assert np.isfinite(0.0)
