"""ArgMax against a numpy reference: the PyPI ncnn is built without ArgMax (ncnn adds it only
on request) and ncnn has no tests/test_argmax.cpp, so the reference below follows ncnn's
src/layer/argmax.cpp (sort (value, index) pairs descending, keep topk; out_max_val adds a row
of values above the row of indexes) over blobs of every rank, ties, topk 1 to all, the layer
and net paths, bad params and inputs, and a Vulkan net (no GPU form: it runs on the CPU)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _vulkan_sandwich import sandwich_param
from oracle import SHAPES_ALL, assert_close, make_bin, make_param, randn, rng, run_layer, run_net


def reference(x: np.ndarray, topk: int, out_max_val: int) -> np.ndarray:
    pairs = sorted(((float(v), i) for i, v in enumerate(x.ravel())), reverse=True)[:topk]
    values = np.array([v for v, _ in pairs], np.float32)
    index = np.array([i for _, i in pairs], np.float32)
    return np.stack([values, index]) if out_max_val else index[None, :]


def check(params, x):
    expected = reference(x, params.get(1, 1), params.get(0, 0))
    text = make_param("ArgMax", params, [x.shape])
    for ret, got in (run_layer("ArgMax", params, [], [x]), run_net(text, make_bin([]), [x])):
        assert ret == 0
        assert_close(got[0], expected, 0.0, f"ArgMax {params} {x.shape}")


@pytest.mark.parametrize("out_max_val", [0, 1])
@pytest.mark.parametrize("shape", SHAPES_ALL, ids=str)
def test_argmax(shape, out_max_val):
    x = randn(rng("argmax", shape), shape)
    size = x.size
    for topk in sorted({1, min(3, size), size}):
        check({0: out_max_val, 1: topk}, x)


def test_argmax_ties_go_to_the_larger_index():
    x = np.array([[1.0, 3.0, 3.0, -1.0], [3.0, 0.0, 2.0, 2.0]], np.float32)
    check({0: 1, 1: 5}, x)
    check({}, np.zeros((2, 3, 5), np.float32))


def test_argmax_defaults():
    x = randn(rng("argmax-default"), (3, 7, 13))
    check({}, x)


def _errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_argmax_bad_topk(caplog):
    x = np.ones((4, 5), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("ArgMax", {1: 0}, [], [x])
        assert ret != 0
        errors = _errors(caplog)
        assert len(errors) == 1 and "ArgMax" in errors[0] and "topk" in errors[0], errors
        assert run_net(make_param("ArgMax", {1: -2}, [x.shape]), make_bin([]), [x])[0] != 0


def test_argmax_topk_beyond_the_blob(caplog):
    # ncnn's partial_sort would run past the end
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("ArgMax", {1: 21}, [], [np.ones((4, 5), np.float32)])
    errors = _errors(caplog)
    assert ret != 0
    assert len(errors) == 1 and "ArgMax" in errors[0] and "topk" in errors[0], errors


@pytest.mark.gpu
def test_argmax_in_vulkan_net():
    x = randn(rng("argmax-vk"), (6, 9, 11))
    expected = reference(x, 4, 1)
    # between two GPU layers: the net downloads, runs ArgMax on the CPU, uploads
    ret, got = run_net(
        sandwich_param("ArgMax", {0: 1, 1: 4}, [x.shape], 1), make_bin([]), [x], use_vulkan=True
    )
    assert ret == 0
    assert_close(got[0], expected, 0.0, "ArgMax vulkan net")
