"""Convolution1D on the GPU over the option grid: every pad form, stride, dilation, bias,
activations, and channel/output counts divisible by 4 and not."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu

GEOMETRY = [
    ({1: 1}, 4, 9),
    ({1: 3}, 4, 20),
    ({1: 3, 4: 1}, 8, 20),
    ({1: 4, 3: 2, 2: 2}, 3, 17),  # strided, dilated
    ({1: 3, 4: 2, 15: 0, 18: -0.5}, 3, 11),  # asymmetric pads, pad_value
    ({1: 4, 3: 2, 4: -233}, 3, 17),  # SAME_UPPER
    ({1: 4, 3: 3, 4: -234}, 3, 17),  # SAME_LOWER
    ({1: 2, 3: 3, 4: -233}, 3, 10),  # SAME with a negative total: no padding at all
    ({1: 5, 4: 2}, 16, 227),
    ({1: 3, 4: 1}, 5, 1),
]
ACTS = {0: None, 1: None, 2: [0.1], 3: [-0.5, 0.8], 4: None, 5: None, 6: [0.2, 0.5]}


def _case(params, c, length, num_output, bias=True, act=0, grid=None):
    g = rng("conv1d-gpu", sorted(params.items()), c, length, num_output, bias, act)
    k = params[1]
    weight = randn(g, (num_output, c, k), 1.0 / np.sqrt(c * k))
    p = {**params, 0: num_output, 5: int(bias), 6: weight.size}
    if act:
        p[9] = act
        if ACTS[act]:
            p[10] = ACTS[act]
    weights = [weight] + ([(randn(g, (num_output,)), 1)] if bias else [])
    return check_layer_gpu("Convolution1D", p, weights, [randn(g, (c, length))], grid=grid)


@pytest.mark.parametrize("num_output", [6, 8])
@pytest.mark.parametrize("geom", GEOMETRY, ids=lambda g: str(g[0]) + f"-{g[1]}x{g[2]}")
def test_convolution1d_grid(geom, num_output):
    params, c, length = geom
    _case(params, c, length, num_output)


@pytest.mark.parametrize("act", range(1, 7))
def test_convolution1d_activation_grid(act):
    _case({1: 3, 4: 1}, 4, 13, 5, act=act)


def test_convolution1d_no_bias():
    _case({1: 3, 4: 1}, 8, 13, 12, bias=False, grid=["fp32", "fp32-pack", "fp16s-pack"])
