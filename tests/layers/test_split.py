"""Split against the PyPI ncnn: 1-3 tops of every rank on every backend (oracle.backends; on
the GPU the tops share the bottom's buffer), the CPU tops sharing storage, and a shared top
read after an in-place consumer of its sibling."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import GPU_GRID, assert_close, backends, check, default_option, randn, rng, run_ncnn, run_net_gpu

SHAPES = [(7,), (11,), (8, 5), (6, 9), (5, 7, 9), (8, 7, 9), (3, 5, 7), (4, 2, 3, 5), (2, 3, 5, 6)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("backend", backends("Split"))
def test_split(shape, n, backend):
    check(backend, "Split", {}, [], [randn(rng("split", shape), shape)], n_outputs=n, tol=0.0)


def test_split_shares_storage():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat

    layer = create_layer_cpu("Split")
    assert type(layer).__name__ == "Split" and not layer.one_blob_only and not layer.support_inplace
    bottom = Mat(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    tops = [Mat(), Mat()]
    assert layer.forward([bottom], tops, default_option()) == 0
    assert all(t.data_ptr() == bottom.data_ptr() for t in tops)


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


@pytest.mark.gpu
@pytest.mark.parametrize("grid", ["fp32", "fp16s-pack"])
def test_split_top_then_inplace_consumer(grid):
    x = randn(rng("split-inplace"), (5, 24))
    ret, ref = run_ncnn(SPLIT_INPLACE, b"", [x])
    assert ret == 0
    ret, got = run_net_gpu(SPLIT_INPLACE, b"", [x], **GPU_GRID[grid])
    assert ret == 0
    assert_close(got[0], ref[0], 1e-4 if grid == "fp32" else 1e-2, grid)
