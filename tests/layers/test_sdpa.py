"""SDPA against the PyPI ncnn oracle over the cases of ncnn's tests/test_sdpa.cpp and
test_sdpa_kvcache.cpp, each case on every backend (the CPU and the GPU option grid: the mask,
the scale, grouped heads and the kv cache all run on the GPU), a numpy reference, and bad inputs.

The oracle keeps its kv cache in a backend-specific layout (its x86 build stores the key cache
transposed, in a capacity-padded buffer), so caches are never compared with it, nor fed to it
from numpy: a past cache reaches its second SDPA straight from a first SDPA layer of the same
net (``kvcache_net``), and the outputs of both nets are compared. ncnn_c's caches have the
standard layout of ncnn's kvcache.md and are checked against numpy."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    GPU_TOL_FP16,
    GPU_TOL_FP32,
    _input_params,
    assert_close,
    backends,
    check,
    check_layer,
    make_bin,
    make_param,
    oracle_outputs,
    rng,
    run_layer,
    run_net,
    run_net_gpu,
)

# ncnn's RandomMat sizes (w, h, c) of q, k, v; attn_mask; scale (test_sdpa.cpp); past_seqlen
# (test_sdpa_kvcache.cpp, which runs the same shapes with the default scale)
NCNN_CASES = [
    ((32, 66, 8), (32, 66, 8), (20, 66, 8), 0, 0.0, 11),
    ((26, 64, 8), (26, 61, 8), (18, 61, 8), 1, 0.0, 11),
    ((40, 62, 7), (40, 61, 7), (24, 61, 7), 0, 0.0, 9),
    ((24, 22, 6), (24, 19, 6), (16, 19, 6), 1, 0.0, 9),
    ((64, 128, 12), (64, 128, 2), (64, 128, 2), 0, 0.0, 1),
    ((64, 122, 12), (64, 127, 2), (48, 127, 2), 1, 0.0, 1),
    ((44, 128, 4), (44, 123, 4), (55, 123, 4), 0, 1.0, 0),
    ((12, 127, 4), (12, 127, 4), (55, 127, 4), 1, 1.0, 0),
    ((28, 17, 15), (28, 127, 5), (32, 127, 5), 0, 0.1, 3),
    ((28, 17, 15), (28, 32, 5), (11, 32, 5), 1, -0.4, 5),
]
IDS = [f"q{c[0]}k{c[1]}v{c[2]}m{c[3]}s{c[4]}p{c[5]}" for c in NCNN_CASES]


def _u(g, wh):
    return g.uniform(-1.2, 1.2, tuple(reversed(wh))).astype(np.float32)


def case_inputs(case, past_len=0):
    """q, k, v[, mask][, past_k, past_v] as numpy arrays (the mask spans past and current keys)."""
    qs, ks, vs, mask, _, _ = case
    g = rng("sdpa", case, past_len)
    q, k, v = _u(g, qs), _u(g, ks), _u(g, vs)
    inputs = [q, k, v]
    if mask:
        inputs.append(_u(g, (past_len + ks[1], qs[1])))
    return inputs, (_u(g, (ks[0], past_len, ks[2])), _u(g, (vs[0], past_len, vs[2])))


def reference(q, k, v, mask=None, scale=0.0):
    """ncnn's SDPA in float64: (heads, src, out_dim)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scale = scale or 1.0 / np.sqrt(q.shape[-1])
    per_group = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, per_group, axis=0), np.repeat(v, per_group, axis=0)
    s = q @ k.swapaxes(-1, -2) * scale
    if mask is not None:
        s = s + mask
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("case", NCNN_CASES, ids=IDS)
@pytest.mark.parametrize("backend", backends("SDPA"))
def test_sdpa(case, backend):
    inputs, _ = case_inputs(case)
    params = {5: case[3], 6: case[4]}
    check(backend, "SDPA", params, [], inputs)
    if backend == "cpu":
        ret, got = run_layer("SDPA", params, [], inputs)
        assert ret == 0
        want = reference(*inputs[:3], inputs[3] if case[3] else None, case[4])
        assert_close(got[0], want, 1e-5, "vs float64")


def kvcache_net(shapes, mask: int) -> str:
    """Two SDPA layers: the first turns (q0, k0, v0) = in0..in2 and empty caches in3, in4 into
    caches holding k0 and v0, the second runs the case (q, k, v[, mask]) = in5.. on them.
    Outputs: the case's output and caches (out0..out2)."""
    n = len(shapes)
    lines = ["7767517", f"{n + 2} {n + 6}"]
    lines += [f"Input in{i} 0 1 in{i} {_input_params(s)}" for i, s in enumerate(shapes)]
    lines.append("SDPA first 5 3 in0 in1 in2 in3 in4 o0 past_k past_v 7=1")
    bottoms = " ".join(f"in{i}" for i in range(5, n))
    lines.append(f"SDPA op {n - 3} 3 {bottoms} past_k past_v out0 out1 out2 5={mask} 7=1")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("case", NCNN_CASES, ids=IDS)
@pytest.mark.parametrize("backend", backends("SDPA"))
def test_kv_cache(case, backend):
    past_len = case[5]
    inputs, (past_k, past_v) = case_inputs(case, past_len)
    q, k, v = inputs[:3]
    params = {5: case[3], 7: 1}
    if past_len == 0:
        # empty caches go straight in; the oracle's output is compared, not its caches
        net_inputs = [*inputs, past_k, past_v]
        text = make_param("SDPA", params, [x.shape for x in net_inputs], 3)
    else:
        # the past caches come from a first SDPA of the same net (see the module docstring)
        first = [q[:, :1], past_k, past_v, past_k[:, :0], past_v[:, :0]]
        net_inputs = first + inputs
        text = kvcache_net([x.shape for x in net_inputs], case[3])
    ret, ref = oracle_outputs(text, make_bin([]), net_inputs, 1)
    assert ret == 0
    if backend == "cpu":
        tol, cache_tol = 1e-5, 0.0
        if past_len == 0:
            check_layer("SDPA", params, [], net_inputs, n_outputs=3, compare=_first_output_only)
            ret, got = run_layer("SDPA", params, [], net_inputs, n_outputs=3)
        else:
            ret, got = run_net(text, make_bin([]), net_inputs, 3)
    else:
        flags = GPU_GRID[backend[3:]]
        fp16 = flags["use_fp16_storage"] or flags["use_fp16_arithmetic"]
        # the caches are copies: exact in fp32, rounded to fp16 with fp16 storage
        tol, cache_tol = (GPU_TOL_FP16, GPU_TOL_FP16) if fp16 else (GPU_TOL_FP32, 0.0)
        ret, got = run_net_gpu(text, make_bin([]), net_inputs, 3, **flags)
    assert ret == 0
    assert_close(got[0], ref[0], tol, f"SDPA {backend} after a cached step vs the oracle")
    keys, values = np.concatenate([past_k, k], axis=1), np.concatenate([past_v, v], axis=1)
    for what, cache, want in (("keys", got[1], keys), ("values", got[2], values)):
        if cache_tol:
            assert_close(cache, want, cache_tol, f"SDPA {backend} cached {what}")
        else:
            np.testing.assert_array_equal(cache, want)
    if backend == "cpu":
        want = reference(q, keys, values, inputs[3] if case[3] else None)
        assert_close(got[0], want, 1e-5, "vs float64")


def _first_output_only(got, ref, what):
    if "out0" not in what:
        return 0.0
    return assert_close(got, ref, 1e-5, what)


def test_decode_steps_match_one_prefill():
    """A prefill of 6 tokens then 3 single-token steps through the caches gives the rows a
    10-token causal prefill gives (the flow of ncnn's benchncnn_llm)."""
    g = rng("sdpa decode")
    heads, groups, dim, n = 8, 2, 16, 10
    q, k, v = _u(g, (dim, n, heads)), _u(g, (dim, n, groups)), _u(g, (dim, n, groups))

    def causal(cur, past):
        m = np.zeros((cur, past + cur), np.float32)
        for i in range(cur):
            m[i, past + i + 1 :] = -np.inf
        return m

    ret, full = run_layer("SDPA", {5: 1}, [], [q, k, v, causal(n, 0)])
    assert ret == 0
    cache = [k[:, :0], v[:, :0]]
    rows = []
    for start, stop in ((0, 6), (6, 7), (7, 8), (8, 9), (9, 10)):
        step = [q[:, start:stop], k[:, start:stop], v[:, start:stop], causal(stop - start, start), *cache]
        ret, out = run_layer("SDPA", {5: 1, 7: 1}, [], step, n_outputs=3)
        assert ret == 0
        rows.append(out[0])
        cache = out[1:]
    np.testing.assert_allclose(np.concatenate(rows, axis=1), full[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("per_head", [1, 8])
@pytest.mark.parametrize("backend", backends("SDPA"))
def test_mask_per_head(per_head, backend):
    g = rng("sdpa mask", per_head)
    q, k, v = _u(g, (16, 5, 8)), _u(g, (16, 7, 4)), _u(g, (12, 7, 4))
    mask = g.uniform(-2, 2, (per_head, 5, 7)).astype(np.float32)
    check(backend, "SDPA", {5: 1}, [], [q, k, v, mask])


@pytest.mark.parametrize("backend", backends("SDPA"))
def test_one_head_as_2d_blobs(backend):
    g = rng("sdpa 2d")
    q, k, v, mask = _u(g, (16, 7)), _u(g, (16, 9)), _u(g, (12, 9)), _u(g, (9, 7))
    check(backend, "SDPA", {5: 1, 6: 0.3}, [], [q, k, v, mask])


def test_bad_inputs(caplog):
    def rejects(params, inputs, words, n_outputs=1):
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            ret, _ = run_layer("SDPA", params, [], inputs, n_outputs=n_outputs)
        assert ret != 0
        assert any("SDPA" in r.getMessage() and words in r.getMessage() for r in caplog.records), caplog.text

    inputs, (pk, pv) = case_inputs(NCNN_CASES[9], 4)
    q, k, v, m = inputs
    rejects({}, [q, k], "inputs")
    rejects({5: 1}, [q, k, v], "inputs")
    rejects({18: 2}, [q, k, v], "int8_scale_term")
    rejects({}, [q, k[..., :27], v], "do not fit")
    rejects({}, [q, k, v[:, :31]], "do not fit")
    rejects({}, [q[:14], k, v], "do not fit")
    rejects({}, [q[0, 0], k, v], "q must be")
    rejects({5: 1}, [q, k, v, m[:, :30]], "attn_mask")
    rejects({5: 1}, [q, k, v, np.repeat(m[None], 2, axis=0)], "attn_mask")
    rejects({7: 1}, [q, k, v, pk[..., :27], pv], "kv caches", 3)
    rejects({7: 1}, [q, k, v, pk, pv[:, :3]], "kv caches", 3)


@pytest.mark.gpu
@pytest.mark.parametrize("what", ["attn_mask", "kv caches", "do not fit"])
def test_bad_inputs_on_the_gpu(caplog, what):
    inputs, (pk, pv) = case_inputs(NCNN_CASES[9], 4)
    q, k, v, m = inputs
    params, bad = {
        "attn_mask": ({5: 1}, [q, k, v, m[:, :30]]),
        "kv caches": ({7: 1}, [q, k, v, pk[..., :27], pv]),
        "do not fit": ({}, [q, k[..., :27], v]),
    }[what]
    text = make_param("SDPA", params, [x.shape for x in bad], 3 if 7 in params else 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin([]), bad, 3 if 7 in params else 1, **GPU_GRID["fp16s"])
    assert ret != 0
    assert any("SDPA" in r.getMessage() and what in r.getMessage() for r in caplog.records), caplog.text


@pytest.mark.parametrize("dst_len", [5, 16])
@pytest.mark.parametrize("backend", backends("SDPA", grid=["fp32", "fp16s"]))
def test_fully_masked_rows_give_zero(dst_len, backend):
    # a query row the mask hides from every key: ncnn gives it 0 (not the 0 / 0 of its exps)
    g = rng("sdpa masked rows", dst_len)
    q, k, v = _u(g, (16, 4, 2)), _u(g, (16, dst_len, 2)), _u(g, (12, dst_len, 2))
    mask = g.uniform(-2, 2, (4, dst_len)).astype(np.float32)
    mask[1] = -np.inf
    mask[3, ::2] = -np.inf
    check(backend, "SDPA", {5: 1}, [], [q, k, v, mask])
    if backend == "cpu":
        ret, got = run_layer("SDPA", {5: 1}, [], [q, k, v, mask])
        assert ret == 0 and not got[0][:, 1].any() and np.isfinite(got[0]).all()


@pytest.mark.parametrize("empty", ["q", "k", "v"])
@pytest.mark.parametrize("kv_cache", [0, 1])
def test_no_tokens_fails_as_ncnn_with_a_clear_error(empty, kv_cache, caplog):
    # a q, k or v of no tokens: ncnn's forward returns -100 (its empty output cannot be
    # allocated); ncnn_c the same, with a line saying which blob is empty (it used to log
    # an internal ValueError)
    g = rng("sdpa no tokens")
    blobs = {"q": _u(g, (16, 3, 4)), "k": _u(g, (16, 5, 4)), "v": _u(g, (12, 5, 4))}
    blobs[empty] = blobs[empty][:, :0]
    inputs = list(blobs.values())
    shapes = [x.shape if x.size else (x.shape[0], 1, x.shape[2]) for x in inputs]
    params, n_out = {7: kv_cache}, 3 if kv_cache else 1
    if kv_cache:
        inputs += [_u(g, (16, 2, 4)), _u(g, (12, 2, 4))]
        shapes += [x.shape for x in inputs[3:]]
    text = make_param("SDPA", params, shapes, n_out)
    if not kv_cache:
        # (the oracle's x86 kv cache has a layout of its own: fed standard caches with an
        # empty k or v it dies of SIGFPE, so only the cacheless forms ask it)
        ret, _ = oracle_outputs(text, make_bin([]), inputs, n_out)
        assert ret == -100
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net(text, make_bin([]), inputs, n_out)
    assert ret == -100
    lines = [r.getMessage() for r in caplog.records]
    assert any(f"{empty} is empty" in line for line in lines), lines
    assert not any("ValueError" in line for line in lines), lines
