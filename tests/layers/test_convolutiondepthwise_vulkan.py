"""ConvolutionDepthWise on the GPU over the option grid: depthwise (elempack 1 and 4),
grouped and channel-multiplier layers, every geometry form, pads and activations."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu

GEOMETRIES = [
    {1: 3, 4: 1},
    {1: 3, 3: 2, 4: 1},
    {1: 1},
    {1: 3, 2: 2, 4: 2},
    {1: 5, 3: 2, 4: -233},
    {1: 4, 3: 2, 4: -234, 18: 0.25},
    {1: 3, 11: 1, 12: 1, 2: 2, 13: 2, 4: 0, 15: 2, 14: 1, 16: 0, 18: -0.5},
]
ACTS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.8], 4: None, 5: None, 6: [0.2, 0.5]}


def _case(geometry, shape, num_output, group, act=0, bias=1, grid=None):
    g = rng("convdw", str(geometry), shape, num_output, group, act, bias)
    kw = geometry.get(1, 1)
    kh = geometry.get(11, kw)
    params = {**geometry, 0: num_output, 5: bias, 6: kw * kh * shape[0] * num_output // group, 7: group}
    if act:
        params[9] = act
        if ACTS[act]:
            params[10] = ACTS[act]
    weights = [randn(g, params[6], 0.5)] + ([(randn(g, num_output), 1)] if bias else [])
    return check_layer_gpu("ConvolutionDepthWise", params, weights, [randn(g, shape)], grid=grid)


# (input shape, num_output, group): depthwise with channels divisible by 4 (elempack 4) and
# not, grouped with 4-divisible and odd per-group counts, and a channel multiplier
LAYOUTS = [
    ((8, 9, 11), 8, 8),
    ((3, 11, 13), 3, 3),
    ((12, 7, 9), 6, 3),
    ((6, 10, 7), 6, 2),
    ((4, 9, 9), 8, 4),
]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape,num_output,group", LAYOUTS, ids=str)
def test_convolutiondepthwise_grid(geometry, shape, num_output, group):
    _case(geometry, shape, num_output, group)


@pytest.mark.parametrize("act", range(1, 7))
@pytest.mark.parametrize("shape,num_output,group", [LAYOUTS[0], LAYOUTS[2]], ids=str)
def test_convolutiondepthwise_activation_grid(act, shape, num_output, group):
    _case({1: 3, 4: 1}, shape, num_output, group, act=act)


@pytest.mark.parametrize("shape,num_output,group", LAYOUTS, ids=str)
def test_convolutiondepthwise_no_bias(shape, num_output, group):
    _case({1: 3, 4: 1}, shape, num_output, group, bias=0, grid=["fp32", "fp32-pack", "fp16s-pack"])


@pytest.mark.parametrize(
    "shape,num_output,group", [((32, 57, 61), 32, 32), ((24, 1, 1), 24, 24), ((18, 15, 17), 36, 3)], ids=str
)
def test_convolutiondepthwise_larger(shape, num_output, group):
    """Odd sizes, 1-pixel planes and several row tiles per row."""
    _case(
        {1: 3, 4: 1}, shape, num_output, group, act=1, grid=["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
    )
