"""MultiHeadAttention on the GPU over the option grid: self-attention, two and three inputs,
custom scale, fp16-stored weights, both attention mask forms; kv_cache stays on the CPU."""

from __future__ import annotations

import logging

import pytest
from oracle import GPU_GRID, check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu

pytestmark = pytest.mark.gpu


def _weights(g, E, qdim, kdim, vdim, fp16=False):
    ws = []
    for rows, cols in ((E, qdim), (E, kdim), (E, vdim), (qdim, E)):
        ws += [(randn(g, (rows * cols,), 0.3), "fp16" if fp16 else 0), (randn(g, (rows,), 0.5), 1)]
    return ws


@pytest.mark.parametrize("E,H,S", [(16, 4, 5), (8, 1, 1), (12, 3, 7), (64, 8, 32)])
def test_self_attention(E, H, S):
    g = rng("mha-vk self", E, H, S)
    ws = _weights(g, E, E, E, E)
    check_layer_gpu("MultiHeadAttention", {0: E, 1: H, 2: E * E}, ws, [randn(g, (S, E))])


@pytest.mark.parametrize("qdim,kdim,vdim,S,L", [(12, 10, 10, 5, 7), (16, 16, 16, 1, 9), (6, 20, 20, 13, 1)])
def test_two_inputs(qdim, kdim, vdim, S, L):
    E, H = 16, 2
    g = rng("mha-vk qk", qdim, kdim, S, L)
    ws = _weights(g, E, qdim, kdim, vdim)
    params = {0: E, 1: H, 2: E * qdim, 3: kdim, 4: vdim}
    check_layer_gpu("MultiHeadAttention", params, ws, [randn(g, (S, qdim)), randn(g, (L, kdim))])


@pytest.mark.parametrize("qdim,kdim,vdim,S,L", [(12, 10, 8, 5, 7), (16, 4, 24, 7, 13)])
def test_three_inputs(qdim, kdim, vdim, S, L):
    E, H = 16, 4
    g = rng("mha-vk qkv", qdim, kdim, vdim, S, L)
    ws = _weights(g, E, qdim, kdim, vdim)
    params = {0: E, 1: H, 2: E * qdim, 3: kdim, 4: vdim}
    inputs = [randn(g, (S, qdim)), randn(g, (L, kdim)), randn(g, (L, vdim))]
    check_layer_gpu("MultiHeadAttention", params, ws, inputs)
    check_layer_gpu("MultiHeadAttention", {**params, 6: 0.3}, ws, inputs, grid=["fp32", "fp16s-pack"])
    ws16 = _weights(g, E, qdim, kdim, vdim, fp16=True)
    check_layer_gpu("MultiHeadAttention", params, ws16, inputs, grid=["fp32", "fp16sa"])


@pytest.mark.parametrize("per_head", [False, True])
@pytest.mark.parametrize("n_qkv", [1, 2, 3])
def test_attn_mask(per_head, n_qkv):
    E, H, S = 16, 4, 6
    L = S if n_qkv == 1 else 9
    g = rng("mha-vk mask", per_head, n_qkv)
    dim = 16 if n_qkv == 1 else 10
    ws = _weights(g, E, 16, dim, dim)
    params = {0: E, 1: H, 2: E * 16, 3: dim, 4: dim, 5: 1}
    inputs = [randn(g, (S, 16))] + [randn(g, (L, dim)) for _ in range(n_qkv - 1)]
    mask = randn(g, (H, S, L) if per_head else (S, L), 2.0)
    mask[..., 0, 1:] = -1e4
    check_layer_gpu("MultiHeadAttention", params, ws, [*inputs, mask])


def test_kv_cache_runs_on_the_cpu():
    import ncnn_c

    E, H, S, P = 16, 4, 5, 3
    g = rng("mha-vk cache")
    ws = _weights(g, E, 16, 16, 16)
    params = {0: E, 1: H, 2: E * 16, 7: 1}
    inputs = [randn(g, (S, 16)), randn(g, (E, P)), randn(g, (E, P))]
    net = ncnn_c.Net()
    net.opt.use_vulkan_compute = True
    assert net.load_param_mem(make_param("MultiHeadAttention", params, [x.shape for x in inputs], 3)) == 0
    assert net.load_model_mem(make_bin(ws)) == 0
    mha = [layer for layer in net.layers() if layer.type == "MultiHeadAttention"]
    assert mha and mha[0].vkdev is None and not mha[0].support_vulkan


def test_bad_mask_fails(caplog):
    E, H = 16, 4
    g = rng("mha-vk bad")
    ws = _weights(g, E, 12, 10, 8)
    params = {0: E, 1: H, 2: E * 12, 3: 10, 4: 8, 5: 1}
    inputs = [randn(g, (5, 12)), randn(g, (7, 10)), randn(g, (7, 8)), randn(g, (5, 6))]
    param = make_param("MultiHeadAttention", params, [x.shape for x in inputs], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, make_bin(ws), inputs, 1, **GPU_GRID["fp32"])
    assert ret != 0
    assert "attn_mask" in caplog.text
