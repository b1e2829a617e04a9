"""MultiHeadAttention against the PyPI ncnn oracle: self-attention, two and three inputs, a custom
scale, fp16-stored weights, both attention mask forms, one case list on every backend
(oracle.backends); the kv cache (CPU only, the GPU net runs it on the CPU) against numpy."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    backends,
    check,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_net,
    run_net_gpu,
)


def mha_weights(g, E, qdim, kdim, vdim, fp16=False):
    ws = []
    for rows, cols in ((E, qdim), (E, kdim), (E, vdim), (qdim, E)):
        ws += [(randn(g, (rows * cols,), 0.3), "fp16" if fp16 else 0), (randn(g, (rows,), 0.5), 1)]
    return ws


def _reference(ws, params, q, k, v, mask=None, cache=None):
    """ncnn's attention in float64: (out, k_rows, v_rows); caches are (embed_dim, past) blobs."""
    E, H = params[0], params.get(1, 1)
    qdim = params[2] // E
    kdim, vdim = params.get(3, E), params.get(4, E)
    hd = E // H
    scale = params.get(6, 1.0 / np.sqrt(hd))
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = (
        (np.asarray(ws[2 * i][0], np.float64), np.asarray(ws[2 * i + 1][0], np.float64)) for i in range(4)
    )
    qa = (q @ wq.reshape(E, qdim).T + bq) * scale
    if cache is not None and k is not q:
        ka, va = cache[0].T.astype(np.float64), cache[1].T.astype(np.float64)
    else:
        ka = k @ wk.reshape(E, kdim).T + bk
        va = v @ wv.reshape(E, vdim).T + bv
        if cache is not None:
            ka = np.concatenate([cache[0].T, ka])
            va = np.concatenate([cache[1].T, va])
    heads = []
    for h in range(H):
        s = qa[:, h * hd : (h + 1) * hd] @ ka[:, h * hd : (h + 1) * hd].T
        if mask is not None:
            s = s + (mask[h] if mask.ndim == 3 else mask)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        heads.append(s @ va[:, h * hd : (h + 1) * hd])
    out = np.concatenate(heads, 1) @ wo.reshape(qdim, E).T + bo
    return out, ka.T, va.T


# -- the cases: (params, weights, inputs) ----------------------------------------------------------

SELF_SHAPES = [(16, 4, 5), (8, 1, 1), (12, 3, 7), (64, 8, 32)]  # E, H, S
TWO_INPUT_DIMS = [(12, 10, 10, 5, 7), (16, 16, 16, 1, 9), (6, 20, 20, 13, 1)]  # qdim, kdim, vdim, S, L
THREE_INPUT_DIMS = [(12, 10, 8, 5, 7), (16, 4, 24, 7, 13)]


def self_attention_case(E, H, S):
    g = rng("mha self", E, H, S)
    qdim = E  # k and v come from q: kdim and vdim take embed_dim
    ws = mha_weights(g, E, qdim, qdim, qdim)
    return {0: E, 1: H, 2: E * qdim}, ws, [randn(g, (S, qdim))]


def two_inputs_case(qdim, kdim, vdim, S, L):
    E, H = 16, 2
    g = rng("mha qk", qdim, kdim, S, L)
    ws = mha_weights(g, E, qdim, kdim, vdim)
    params = {0: E, 1: H, 2: E * qdim, 3: kdim, 4: vdim}
    return params, ws, [randn(g, (S, qdim)), randn(g, (L, kdim))]


def three_inputs_case(qdim, kdim, vdim, S, L, form):
    """``form``: "plain", "scale" (a custom scale) or "fp16 weights" (fp16-stored weights)."""
    E, H = 16, 4
    g = rng("mha qkv", qdim, kdim, vdim, S, L)
    ws = mha_weights(g, E, qdim, kdim, vdim)
    params = {0: E, 1: H, 2: E * qdim, 3: kdim, 4: vdim}
    inputs = [randn(g, (S, qdim)), randn(g, (L, kdim)), randn(g, (L, vdim))]
    if form == "scale":
        params[6] = 0.3
    if form == "fp16 weights":
        ws = mha_weights(g, E, qdim, kdim, vdim, fp16=True)
    return params, ws, inputs


def attn_mask_case(per_head, n_qkv):
    E, H, S = 16, 4, 6
    L = S if n_qkv == 1 else 9
    g = rng("mha mask", per_head, n_qkv)
    dim = 16 if n_qkv == 1 else 10
    ws = mha_weights(g, E, 16, dim, dim)
    params = {0: E, 1: H, 2: E * 16, 3: dim, 4: dim, 5: 1}
    inputs = [randn(g, (S, 16))] + [randn(g, (L, dim)) for _ in range(n_qkv - 1)]
    mask = randn(g, (H, S, L) if per_head else (S, L), 2.0)
    # a causal-style -inf-ish mask as models use, plus random values
    mask[..., 0, 1:] = -1e4
    return params, ws, [*inputs, mask]


# every case by name, as (builder, its arguments): a case's arrays are made when it runs
CASES = {
    **{f"self E{E} H{H} S{S}": (self_attention_case, (E, H, S)) for E, H, S in SELF_SHAPES},
    **{f"qk {dims}": (two_inputs_case, dims) for dims in TWO_INPUT_DIMS},
    **{f"qkv {dims} {form}": (three_inputs_case, (*dims, form)) for dims in THREE_INPUT_DIMS
       for form in ("plain", "scale", "fp16 weights")},
    **{f"mask per_head={p} n_qkv={n}": (attn_mask_case, (p, n)) for p in (False, True) for n in (1, 2, 3)},
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("backend", backends("MultiHeadAttention"))
def test_attention(name, backend):
    build, args = CASES[name]
    check(backend, "MultiHeadAttention", *build(*args))


def test_matches_numpy_definition():
    E, H, S, L = 16, 4, 5, 7
    g = rng("mha np")
    ws = mha_weights(g, E, 12, 10, 8)
    params = {0: E, 1: H, 2: E * 12, 3: 10, 4: 8, 5: 1}
    q, k, v, m = randn(g, (S, 12)), randn(g, (L, 10)), randn(g, (L, 8)), randn(g, (S, L))
    ret, out = run_layer("MultiHeadAttention", params, ws, [q, k, v, m])
    assert ret == 0
    np.testing.assert_allclose(out[0], _reference(ws, params, q, k, v, m)[0], rtol=1e-5, atol=1e-5)


# The oracle's kv_cache path (x86 build, fp32 options) returns NaN for self-attention with a
# cache and wrong values for cross-attention with a cache (relative error ~0.9 against the
# plain formula, which our output matches to 1e-7), so the cache is checked against numpy.
@pytest.mark.parametrize("mode", ["self", "cross", "cross3"])
@pytest.mark.parametrize("mask", [False, True])
def test_kv_cache(mode, mask):
    E, H, S, L, P = 16, 4, 5, 7, 3
    g = rng("mha cache", mode, mask)
    dim = 16 if mode == "self" else 10
    ws = mha_weights(g, E, 16, dim, dim)
    params = {0: E, 1: H, 2: E * 16, 3: dim, 4: dim, 7: 1, 5: int(mask)}
    q = randn(g, (S, 16))
    kv = {"self": [], "cross": [randn(g, (L, dim))], "cross3": [randn(g, (L, dim)), randn(g, (L, dim))]}[mode]
    dst = S + P if mode == "self" else P
    m = [randn(g, (S, dst))] if mask else []
    cache = (randn(g, (E, P)), randn(g, (E, P)))
    ret, out = run_layer("MultiHeadAttention", params, ws, [q, *kv, *m, *cache], n_outputs=3)
    assert ret == 0
    k = kv[0] if kv else q
    v = kv[-1] if kv else q
    ref = _reference(ws, params, q, k, v, m[0] if m else None, cache)
    for got, want in zip(out, ref, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert out[1].shape == (E, dst)
    # the Net path gives the same three blobs
    inputs = [q, *kv, *m, *cache]
    ret, net_out = run_net(
        make_param("MultiHeadAttention", params, [x.shape for x in inputs], 3), make_bin(ws), inputs, 3
    )
    assert ret == 0
    for got, want in zip(net_out, out, strict=True):
        np.testing.assert_array_equal(got, want)


def _rejects(caplog, params, weights, inputs, words, n_outputs=1):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("MultiHeadAttention", params, weights, inputs, n_outputs=n_outputs)
    assert ret != 0
    assert any(words in r.getMessage() for r in caplog.records), caplog.text


def test_bad_inputs(caplog):
    E, H = 16, 4
    g = rng("mha bad")
    ws = mha_weights(g, E, 12, 10, 8)
    params = {0: E, 1: H, 2: E * 12, 3: 10, 4: 8}
    q, k, v = randn(g, (5, 12)), randn(g, (7, 10)), randn(g, (7, 8))
    _rejects(caplog, params, ws, [q[:, :11], k, v], "rows of 12")
    _rejects(caplog, params, ws, [q[None], k, v], "2-D")
    _rejects(caplog, params, ws, [q, k, v[:6]], "rows")
    _rejects(caplog, params, ws, [q, k, v, v], "inputs")
    _rejects(caplog, {**params, 5: 1}, ws, [q, k, v, randn(g, (5, 6))], "attn_mask")
    _rejects(caplog, {**params, 5: 1}, ws, [q, k, v, randn(g, (2, 5, 7))], "attn_mask")
    _rejects(caplog, {**params, 1: 5}, ws, [q, k, v], "heads")
    _rejects(caplog, {**params, 2: E * 12 + 1}, ws, [q, k, v], "weight_data_size")
    _rejects(caplog, {**params, 18: 1}, ws, [q, k, v], "quantized")
    _rejects(caplog, {**params, 7: 1}, ws, [q, k, v, randn(g, (8, 3)), randn(g, (8, 3))], "caches", 3)


@pytest.mark.gpu
def test_kv_cache_runs_on_the_cpu_in_a_gpu_net():
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


@pytest.mark.gpu
def test_bad_mask_fails_on_the_gpu(caplog):
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
