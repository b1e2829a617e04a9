"""Flatten on the GPU over the option grid: every input rank, packed and unpacked."""

from __future__ import annotations

import pytest
from oracle import SHAPES_ALL, check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


@pytest.mark.parametrize("shape", SHAPES_ALL + [(8, 5, 7), (3, 7, 13), (4, 2, 3, 5), (3, 3, 1, 1)], ids=str)
def test_flatten(shape):
    check("Flatten", {}, [], [randn(rng("flatten", shape), shape)])
