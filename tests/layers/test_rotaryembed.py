"""RotaryEmbed against the PyPI ncnn oracle over the cases of ncnn's tests/test_rotaryembed.cpp,
plus a 2-D input and caches longer than the sequence, each case on every backend (the CPU and
the GPU option grid, both pair forms), and bad inputs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import GPU_GRID, backends, check, make_bin, make_param, rng, run_layer, run_net_gpu

# ncnn's RandomMat(embed_dim, seqlen, num_heads) and interleaved
NCNN_CASES = [
    ((32, 66, 8), 0), ((26, 64, 8), 1), ((64, 28, 12), 0), ((48, 22, 12), 1),
    ((44, 28, 64), 0), ((12, 27, 64), 1), ((28, 17, 15), 0), ((28, 17, 15), 1),
]  # fmt: skip


def _inputs(e, s, h, key, cache_rows=None, cache_cols=None, two_d=False):
    g = rng("rotaryembed", e, s, h, key)
    x = g.uniform(-1.2, 1.2, (s, e) if two_d else (h, s, e)).astype(np.float32)
    shape = (cache_rows or s, cache_cols or e // 2)
    return [x, g.uniform(-1.2, 1.2, shape).astype(np.float32), g.uniform(-1.2, 1.2, shape).astype(np.float32)]


def _numpy(x, cos, sin, interleaved):
    e = x.shape[-1]
    cos, sin = cos[: x.shape[-2], : e // 2], sin[: x.shape[-2], : e // 2]
    pairs = (
        x.reshape(*x.shape[:-1], e // 2, 2)
        if interleaved
        else x.reshape(*x.shape[:-1], 2, e // 2).swapaxes(-1, -2)
    )
    a, b = pairs[..., 0], pairs[..., 1]
    out = np.stack([a * cos - b * sin, a * sin + b * cos], axis=-1)
    return out.reshape(x.shape) if interleaved else out.swapaxes(-1, -2).reshape(x.shape)


@pytest.mark.parametrize("shape,interleaved", NCNN_CASES, ids=str)
@pytest.mark.parametrize("backend", backends("RotaryEmbed"))
def test_rotaryembed(shape, interleaved, backend):
    inputs = _inputs(*shape, interleaved)
    check(backend, "RotaryEmbed", {0: interleaved}, [], inputs)
    if backend == "cpu":
        ret, got = run_layer("RotaryEmbed", {0: interleaved}, [], inputs)
        assert ret == 0
        np.testing.assert_allclose(got[0], _numpy(*inputs, interleaved), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("form", ["2d", "long"])
@pytest.mark.parametrize("backend", backends("RotaryEmbed"))
def test_two_d_input_and_long_caches(interleaved, form, backend):
    if form == "2d":
        inputs = _inputs(20, 9, 1, "2d", two_d=True)
    else:
        inputs = _inputs(20, 9, 3, "long", cache_rows=16, cache_cols=12)
    check(backend, "RotaryEmbed", {0: interleaved}, [], inputs)


def test_bad_inputs(caplog):
    def rejects(inputs, words):
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="ncnn_c"):
            ret, _ = run_layer("RotaryEmbed", {}, [], inputs)
        assert ret != 0
        assert any("RotaryEmbed" in r.getMessage() and words in r.getMessage() for r in caplog.records), (
            caplog.text
        )

    x, cos, sin = _inputs(28, 17, 15, "bad")
    rejects([x, cos], "inputs")
    rejects([x[..., :27], cos, sin], "even embed_dim")
    rejects([x[0, 0], cos, sin], "x must be")
    rejects([x, cos[:16], sin], "cos cache")
    rejects([x, cos, sin[:, :13]], "sin cache")
    rejects([x, cos, sin[None]], "sin cache")


@pytest.mark.gpu
def test_bad_inputs_on_the_gpu(caplog):
    x, cos, sin = _inputs(28, 17, 15, "bad")
    inputs = [x, cos[:16], sin]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("RotaryEmbed", {}, [a.shape for a in inputs]),
            make_bin([]),
            inputs,
            **GPU_GRID["fp16s"],
        )
    assert ret != 0
    assert any("RotaryEmbed" in r.getMessage() and "cos cache" in r.getMessage() for r in caplog.records), (
        caplog.text
    )
