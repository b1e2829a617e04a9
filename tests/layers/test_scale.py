"""Scale: stored scales (with and without bias) and the two-input form (scale_data_size -233, a
1-D or a 2-D scale blob), in place and not.

Per ncnn channel index: elements of a 1-D blob, rows of a 2-D one, channels of 3-D / 4-D (counts
that pack by 4 and not). One case list, every backend (oracle.backends).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    GPU_GRID,
    SHAPES_ALL,
    backends,
    check,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_net_gpu,
)

PATHS = ("layer", "inplace", "net")
# every rank, plus channel counts that pack by 4 (and one that packs to a single element)
SHAPES = SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5), (12,), (8, 3), (8, 1, 1)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("bias_term", [0, 1])
@pytest.mark.parametrize("backend", backends("Scale"))
def test_scale(shape, bias_term, backend):
    g = rng("scale", shape, bias_term)
    n = shape[0]
    weights = [(randn(g, (n,)), 1)] + ([(randn(g, (n,)), 1)] if bias_term else [])
    x = randn(g, shape)
    params = {0: n, 1: bias_term} if bias_term else {0: n}
    # one rounding (x*s) is exact; with a bias, ncnn's x86 fused multiply-add rounds once less
    check(backend, "Scale", params, weights, [x], tol=0.0 if not bias_term else 1e-6, paths=PATHS)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("Scale"))
def test_scale_from_blob(shape, backend):
    g = rng("scale-blob", shape)
    x, s = randn(g, shape), randn(g, (shape[0],))
    # the in-place form returns both blobs, which check_layer's inplace path cannot compare
    check(backend, "Scale", {0: -233}, [], [x, s], tol=0.0, paths=("layer", "net"))


@pytest.mark.parametrize("backend", backends("Scale"))
def test_scale_from_2d_blob(backend):
    # a (4, 2) scale blob: on the GPU its packed rows interleave the scales, so it is converted
    g = rng("scale-blob2d")
    x, s = randn(g, (8, 5, 7)), randn(g, (4, 2))
    check(backend, "Scale", {0: -233}, [], [x, s], tol=0.0, paths=("layer", "net"))


@pytest.mark.parametrize("backend", backends("Scale"))
def test_scale_from_blob_not_in_place(backend):
    # the net's non-light mode keeps the bottom: the layer must write a new blob
    g = rng("scale-blob-nl")
    x, s = randn(g, (8, 5, 7)), randn(g, (8,))
    check(backend, "Scale", {0: -233}, [], [x, s], tol=0.0, paths=("net",), lightmode=False)


def test_scale_from_blob_inplace():
    from oracle import default_option

    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.mat import Mat
    from ncnn_c.paramdict import ParamDict

    g = rng("scale-blob-inplace")
    x, s = randn(g, (4, 3, 5)), randn(g, (4,))
    layer = create_layer_cpu("Scale")
    pd = ParamDict()
    pd.set(0, -233)
    assert layer.load_param(pd) == 0 and not layer.one_blob_only
    blobs = [Mat(x.copy()), Mat(s.copy())]
    assert layer.forward_inplace(blobs, default_option()) == 0
    assert np.array_equal(blobs[0].numpy(), x * s[:, None, None])


def test_scale_from_blob_too_short(caplog):
    g = rng("scale-short")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Scale", {0: -233}, [], [randn(g, (4, 3, 3)), randn(g, (3,))])
    assert ret != 0 and "3 scales for a 3-D blob of 4 channels" in caplog.text


def test_scale_from_blob_with_bias_is_rejected(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Scale", {0: -233, 1: 1}, [], [np.ones(3, np.float32), np.ones(3, np.float32)])
    assert ret != 0 and "bias_term" in caplog.text


@pytest.mark.parametrize(
    "shape, what", [((4, 2, 2), "3-D blob of 4"), ((5, 6), "2-D blob of 5"), ((9,), "1-D blob of 9")]
)
def test_scale_too_few_scales(shape, what, caplog):
    g = rng("scale-bad", shape)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Scale", {0: 3}, [(randn(g, (3,)), 1)], [randn(g, shape)])
    assert ret != 0 and f"3 scales for a {what} channels" in caplog.text


def test_scale_missing_bias(caplog):
    g = rng("scale-nobias")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Scale", {0: 3, 1: 1}, [(randn(g, (3,)), 1)], [randn(g, (3, 2, 2))])
    assert ret != 0 and "could not load 3 bias" in caplog.text


def _run_gpu(params, weights, inputs):
    text = make_param("Scale", params, [x.shape for x in inputs], 1)
    return run_net_gpu(text, make_bin(weights), inputs, 1, **GPU_GRID["fp16s-pack"])


@pytest.mark.gpu
@pytest.mark.parametrize(
    "shape, what", [((8, 2, 2), "3-D blob of 8"), ((5, 6), "2-D blob of 5"), ((9,), "1-D blob of 9")]
)
def test_scale_too_few_scales_on_the_gpu(shape, what, caplog):
    g = rng("scale-bad-vk", shape)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = _run_gpu({0: 3}, [(randn(g, (3,)), 1)], [randn(g, shape)])
    assert ret != 0 and f"3 scales for a {what} channels" in caplog.text


@pytest.mark.gpu
def test_scale_from_blob_too_short_on_the_gpu(caplog):
    g = rng("scale-short-vk")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = _run_gpu({0: -233}, [], [randn(g, (8, 3, 3)), randn(g, (4,))])
    assert ret != 0 and "4 scales for a 3-D blob of 8 channels" in caplog.text
