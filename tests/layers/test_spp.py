"""SPP against a numpy reference: the PyPI ncnn is built without SPP (ncnn adds it only on
request) and ncnn has no tests/test_spp.cpp. The reference below walks ncnn's
src/layer/spp.cpp loop by loop (per level: kernel = stride = ceil(size / bins), zero padding
ceil(shortfall / 2) per side, max or average over the whole kernel), writing the bins in
order into one 1-D blob (where ncnn itself overflows its (bins, 1, 2) top). Max pooling is
exact, averages within float32 summation order. Every pyramid height 1-4, sizes smaller than
the grid, 1-D to 3-D blobs, the layer and net paths, bad params and inputs, and a Vulkan net
(no GPU form: it runs on the CPU)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from _vulkan_sandwich import sandwich_param
from oracle import assert_close, make_bin, make_param, randn, rng, run_layer, run_net


def reference(x: np.ndarray, pooling_type: int, pyramid_height: int) -> np.ndarray:
    x3 = x.reshape((1,) * (3 - x.ndim) + x.shape).astype(np.float64)
    c, h, w = x3.shape
    out = []
    for p in range(pyramid_height):
        bins = 1 << p
        kh, kw = math.ceil(h / bins), math.ceil(w / bins)
        ph, pw = (kh * bins - h + 1) // 2, (kw * bins - w + 1) // 2
        padded = np.zeros((c, h + 2 * ph, w + 2 * pw))
        padded[:, ph : ph + h, pw : pw + w] = x3
        for q in range(c):
            for i in range(bins):
                for j in range(bins):
                    window = padded[q, i * kh : i * kh + kh, j * kw : j * kw + kw]
                    out.append(window.max() if pooling_type == 0 else window.sum() / (kh * kw))
    return np.array(out, np.float32)


SHAPES = [(3, 7, 13), (16, 8, 8), (2, 13, 6), (4, 1, 1), (2, 3, 2), (1, 227, 227), (7, 13), (29,)]


def check(params, x, tol):
    expected = reference(x, params.get(0, 0), params.get(1, 1))
    text = make_param("SPP", params, [x.shape])
    for ret, got in (run_layer("SPP", params, [], [x]), run_net(text, make_bin([]), [x])):
        assert ret == 0
        assert_close(got[0], expected, tol, f"SPP {params} {x.shape}")


@pytest.mark.parametrize("height", [1, 2, 3, 4])
@pytest.mark.parametrize("pooling_type", [0, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_spp(shape, pooling_type, height):
    # negative values show the zero padding taking part in max pooling
    x = randn(rng("spp", shape), shape) - np.float32(0.5)
    check({0: pooling_type, 1: height}, x, 0.0 if pooling_type == 0 else 1e-6)


def test_spp_defaults():
    check({}, randn(rng("spp-default"), (3, 5, 6)), 0.0)


def _errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "params,word",
    [({0: 2}, "pooling_type"), ({1: 0}, "pyramid_height"), ({1: 13}, "pyramid_height")],
    ids=str,
)
def test_spp_bad_params(caplog, params, word):
    x = np.ones((2, 4, 4), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("SPP", params, [], [x])
        assert ret != 0
        errors = _errors(caplog)
        assert len(errors) == 1 and "SPP" in errors[0] and word in errors[0], errors
        assert run_net(make_param("SPP", params, [x.shape]), make_bin([]), [x])[0] != 0


def test_spp_refuses_4d(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("SPP", {}, [], [np.ones((2, 3, 4, 4), np.float32)])
    errors = _errors(caplog)
    assert ret != 0
    assert len(errors) == 1 and "SPP" in errors[0] and "dims" in errors[0], errors


@pytest.mark.gpu
def test_spp_in_vulkan_net():
    x = randn(rng("spp-vk"), (4, 9, 11))
    expected = reference(x, 1, 3)
    # between two GPU layers: the net downloads, runs SPP on the CPU, uploads
    ret, got = run_net(sandwich_param("SPP", {0: 1, 1: 3}, [x.shape], 1), make_bin([]), [x], use_vulkan=True)
    assert ret == 0
    assert_close(got[0], expected, 1e-6, "SPP vulkan net")
