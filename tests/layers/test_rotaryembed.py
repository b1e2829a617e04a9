"""RotaryEmbed against the PyPI ncnn oracle over the cases of ncnn's tests/test_rotaryembed.cpp,
plus a 2-D input and caches longer than the sequence, a Vulkan net, and bad inputs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, rng, run_layer

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
def test_rotaryembed(shape, interleaved):
    inputs = _inputs(*shape, interleaved)
    check_layer("RotaryEmbed", {0: interleaved}, [], inputs)
    ret, got = run_layer("RotaryEmbed", {0: interleaved}, [], inputs)
    assert ret == 0
    np.testing.assert_allclose(got[0], _numpy(*inputs, interleaved), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_two_d_input_and_long_caches(interleaved):
    check_layer("RotaryEmbed", {0: interleaved}, [], _inputs(20, 9, 1, "2d", two_d=True))
    check_layer("RotaryEmbed", {0: interleaved}, [], _inputs(20, 9, 3, "long", cache_rows=16, cache_cols=12))


@pytest.mark.gpu
def test_in_vulkan_net():
    check_in_vulkan_net("RotaryEmbed", {0: 1}, [], _inputs(28, 17, 15, "vk"))


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
