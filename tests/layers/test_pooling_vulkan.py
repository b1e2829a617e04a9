"""Pooling on the GPU over the option grid: windowed max/avg with pad modes, adaptive, global."""

from __future__ import annotations

import pytest
from oracle import check_layer_gpu, randn, rng

pytestmark = pytest.mark.gpu

CASES = [
    {0: 0, 1: 3, 2: 2},
    {0: 1, 1: 3, 2: 2},
    {0: 1, 1: 2, 2: 2, 3: 1, 5: 1},
    {0: 0, 1: 3, 2: 1, 3: 1, 5: 2},
    {0: 1, 1: 3, 2: 2, 5: 3, 6: 0},
    {0: 0, 4: 1},
    {0: 1, 4: 1},
    {0: 1, 7: 1, 8: 4, 18: 3},
]


@pytest.mark.parametrize("params", CASES, ids=str)
@pytest.mark.parametrize("shape", [(3, 7, 13), (8, 17, 19), (1, 1, 1)], ids=str)
def test_pooling_grid(params, shape):
    if shape == (1, 1, 1) and not params.get(4) and not params.get(7):
        return  # a 1x1 input is smaller than the kernel: covered by the CPU tests
    check_layer_gpu("Pooling", params, [], [randn(rng("pool", shape), shape)])


@pytest.mark.parametrize("ptype", [0, 1])
@pytest.mark.parametrize("k,s", [(2, 2), (3, 2), (3, 1), (1, 1)], ids=str)
@pytest.mark.parametrize(
    "pad,mode,inc", [(0, 0, 0), (1, 0, 0), (1, 0, 1), (1, 1, 0), (0, 2, 0), (0, 3, 1)], ids=str
)
def test_pooling_pack4(ptype, k, s, pad, mode, inc):
    """The elempack 4 shader over kernels, strides and every pad mode (8 channels pack)."""
    params = {0: ptype, 1: k, 2: s, 3: pad, 5: mode, 6: inc}
    shape = (8, 11, 13)
    check_layer_gpu(
        "Pooling", params, [], [randn(rng("pool4", shape, k), shape)], grid=["fp32-pack", "fp16sa-pack"]
    )


@pytest.mark.parametrize("pooling_type", [0, 1], ids=["max", "avg"])
@pytest.mark.parametrize("shape", [(4, 300, 300), (3, 301, 299)], ids=str)
def test_global_pooling_past_lavapipes_loop_limit(shape, pooling_type):
    # llvmpipe silently ends an invocation after 65535 loop iterations: a 300x300 channel is
    # 90000 values, reduced by one invocation (unrolled 8 ways, it stays under the limit)
    check_layer_gpu("Pooling", {0: pooling_type, 4: 1}, [], [randn(rng("gpool-big", shape), shape)])
