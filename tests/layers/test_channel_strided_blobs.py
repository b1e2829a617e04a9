"""Blobs whose channels are 1x1 (or 1xN) planes: each channel is padded to cstep, so the numpy
views the layers write into are strided by 16 bytes. numpy 2.4's float32 ``np.negative``
mis-writes exactly such outputs; these cases pin every layer that negates (and a few that
do not) against the oracle on those shapes, so the bug or a new one cannot come back."""

from __future__ import annotations

import pytest
from oracle import check_layer, randn, rng

SHAPES = [(8, 1, 1), (5, 1, 3), (4, 2, 1, 1)]
ELEMENTWISE = [
    ("Sigmoid", {}),
    ("BNLL", {}),
    ("Swish", {}),
    ("Mish", {}),
    ("ELU", {0: 0.5}),
    ("UnaryOp", {0: 1}),  # neg
    ("UnaryOp", {0: 7}),  # exp
    ("HardSwish", {}),
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("case", ELEMENTWISE, ids=lambda c: f"{c[0]}{c[1]}")
def test_elementwise_on_unit_planes(case, shape):
    layer, params = case
    x = randn(rng(layer, params, shape), shape, 3.0)
    check_layer(layer, params, inputs=[x], paths=("layer", "inplace", "net"))


@pytest.mark.parametrize(
    "act", [(1, None), (2, [0.1]), (3, [-0.5, 0.5]), (4, None), (5, None), (6, [0.2, 0.5])]
)
def test_convolution_activation_on_unit_planes(act):
    kind, values = act
    g = rng("conv-1x1-plane", kind)
    w = randn(g, (16, 12), 0.5)
    p = {0: 16, 1: 1, 5: 1, 6: w.size, 9: kind}
    if values is not None:
        p[10] = values
    check_layer("Convolution", p, [(w, 0), (randn(g, (16,)), 1)], [randn(g, (12, 1, 1), 2.0)])
