"""MultiHeadAttention on the GPU over the option grid: self-attention, two and three inputs,
custom scale, fp16-stored weights, both attention mask forms (test_multiheadattention.py's
cases); kv_cache stays on the CPU."""

from __future__ import annotations

import logging

import pytest
from oracle import GPU_GRID, check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu
from test_multiheadattention import (
    SELF_SHAPES,
    THREE_INPUT_DIMS,
    TWO_INPUT_DIMS,
    attn_mask_cases,
    mha_weights,
    self_attention_cases,
    three_inputs_cases,
    two_inputs_cases,
)

pytestmark = pytest.mark.gpu


def _check(cases, grid=None):
    for params, weights, inputs in cases:
        check_layer_gpu("MultiHeadAttention", params, weights, inputs, grid=grid)


@pytest.mark.parametrize("E,H,S", SELF_SHAPES)
def test_self_attention(E, H, S):
    _check(self_attention_cases(E, H, S))


@pytest.mark.parametrize("qdim,kdim,vdim,S,L", TWO_INPUT_DIMS)
def test_two_inputs(qdim, kdim, vdim, S, L):
    _check(two_inputs_cases(qdim, kdim, vdim, S, L))


@pytest.mark.parametrize("qdim,kdim,vdim,S,L", THREE_INPUT_DIMS)
def test_three_inputs(qdim, kdim, vdim, S, L):
    cases = three_inputs_cases(qdim, kdim, vdim, S, L)
    _check([cases["plain"]])
    _check([cases["scale"]], grid=["fp32", "fp16s-pack"])
    _check([cases["fp16 weights"]], grid=["fp32", "fp16sa"])


@pytest.mark.parametrize("per_head", [False, True])
@pytest.mark.parametrize("n_qkv", [1, 2, 3])
def test_attn_mask(per_head, n_qkv):
    _check(attn_mask_cases(per_head, n_qkv))


def test_kv_cache_runs_on_the_cpu():
    import ncnn_c

    E, H, S, P = 16, 4, 5, 3
    g = rng("mha-vk cache")
    ws = mha_weights(g, E, 16, 16, 16)
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
    ws = mha_weights(g, E, 12, 10, 8)
    params = {0: E, 1: H, 2: E * 12, 3: 10, 4: 8, 5: 1}
    inputs = [randn(g, (5, 12)), randn(g, (7, 10)), randn(g, (7, 8)), randn(g, (5, 6))]
    param = make_param("MultiHeadAttention", params, [x.shape for x in inputs], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, make_bin(ws), inputs, 1, **GPU_GRID["fp32"])
    assert ret != 0
    assert "attn_mask" in caplog.text
