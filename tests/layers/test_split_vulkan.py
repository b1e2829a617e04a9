"""Split on the GPU over the option grid (tops share the bottom's buffer)."""

from __future__ import annotations

import pytest
from oracle import GPU_GRID, assert_close, check_layer_gpu, randn, rng, run_ncnn, run_net_gpu

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", [(7,), (8, 5), (5, 7, 9), (8, 7, 9), (4, 2, 3, 5)], ids=str)
@pytest.mark.parametrize("n", [1, 3])
def test_split_grid(shape, n):
    check_layer_gpu("Split", {}, [], [randn(rng("split", shape), shape)], n_outputs=n)


# The tops share the bottom's buffer, so the net must clone before an in-place consumer of one
# top writes it while another top is still to be read (the CPU net marks such aliases; the
# Vulkan net counts pending readers per blob name only). vision_transformer.param's residual
# branch: Split -> LayerNorm (in place) on one top, BinaryOp reading the other top later, which
# then saw the normalised values (rel L2 0.2 after the first block).
SPLIT_INPLACE = """7767517
4 5
Input in0 0 1 in0 0=24 1=5
Split sp 1 2 in0 a b
LayerNorm ln 1 1 b c 0=24 1=1e-5 2=0
BinaryOp add 2 1 a c out0 0=0
"""


@pytest.mark.parametrize("grid", ["fp32", "fp16s-pack"])
def test_split_top_then_inplace_consumer(grid):
    x = randn(rng("split-inplace"), (5, 24))
    ret, ref = run_ncnn(SPLIT_INPLACE, b"", [x])
    assert ret == 0
    ret, got = run_net_gpu(SPLIT_INPLACE, b"", [x], **GPU_GRID[grid])
    assert ret == 0
    assert_close(got[0], ref[0], 1e-4 if grid == "fp32" else 1e-2, grid)
