"""Packing (CPU and GPU). The PyPI ncnn oracle segfaults on a Packing layer (even a plain
out_elempack=4 on a 1-D blob), so the checks are against the definition instead: extract
unpacks, so a round trip must give the input back exactly (fp32) or rounded to fp16; the
packed layout itself is checked lane by lane on the CPU layer."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import default_option, make_param, randn, rng, run_net, run_net_gpu

SHAPES = [(8,), (7,), (8, 5), (3, 5), (8, 3, 5), (5, 3, 4), (1, 1, 1), (8, 2, 3, 5), (6, 2, 3, 5)]


def _layer(params):
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_cpu("Packing")
    pd = ParamDict()
    for k, v in params.items():
        pd.set(k, v)
    return layer, layer.load_param(pd)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_cpu_layout(shape):
    from ncnn_c.mat import Mat

    x = randn(rng("packing", shape), shape)
    layer, ret = _layer({0: 4})
    assert ret == 0
    top = Mat()
    assert layer.forward(Mat(x), top, default_option()) == 0
    if shape[0] % 4:
        # not divisible, no padding: the blob passes unchanged
        assert top.elempack == 1
        np.testing.assert_array_equal(top.numpy(), x)
        return
    assert top.elempack == 4 and top.elemsize == 16
    t = top.tensor()
    # lane k of packed element i is logical index 4 * i + k of the outer axis
    np.testing.assert_array_equal(np.moveaxis(t, -1, 1).reshape(x.shape), x)
    back = Mat()
    unpack, _ = _layer({0: 1})
    assert unpack.forward(top, back, default_option()) == 0
    assert back.elempack == 1
    np.testing.assert_array_equal(back.numpy(), x)


@pytest.mark.parametrize("shape", [(5,), (3, 5), (5, 3, 4), (6, 2, 3, 5)], ids=str)
def test_cpu_padding(shape):
    x = randn(rng("packing-pad", shape), shape)
    ret, (out,) = run_net(make_param("Packing", {0: 4, 1: 1}, [shape]), b"", [x])
    assert ret == 0
    padded = -(-shape[0] // 4) * 4
    assert out.shape == (padded,) + shape[1:]
    np.testing.assert_array_equal(out[: shape[0]], x)
    assert not out[shape[0] :].any()


def test_bad_param(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        _, ret = _layer({0: 0})
    assert ret != 0 and "out_elempack" in caplog.text


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("pad", [0, 1])
def test_gpu_round_trip(shape, fp16, pad):
    x = randn(rng("packing-gpu", shape, fp16), shape)
    text = make_param("Packing", {0: 4, 1: pad}, [shape])
    ret, (out,) = run_net_gpu(text, b"", [x], use_fp16_storage=fp16, use_fp16_packed=fp16)
    assert ret == 0
    padded = -(-shape[0] // 4) * 4 if pad else shape[0]
    assert out.shape == (padded,) + shape[1:]
    want = x.astype(np.float16).astype(np.float32) if fp16 else x
    np.testing.assert_array_equal(out[: shape[0]], want)
    assert not out[shape[0] :].any()
