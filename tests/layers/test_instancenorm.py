"""InstanceNorm against the PyPI ncnn oracle: every dims, packed and unpacked channel counts,
affine on/off, eps, large offsets, the non-light (not in place) net, bad blobs. One case list,
every backend (oracle.backends)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _norm_check import check_norm
from oracle import GPU_GRID, SHAPES_ALL, backends, make_bin, make_param, randn, rng, run_layer, run_net_gpu

# exact fp32 sets for the large offsets, which fp16 cannot hold to the spread's precision
FP32 = ["fp32", "fp32-pack"]


def instancenorm_case(shape, affine=1, eps=None, offset=0.0):
    """(params, weights, inputs) of an InstanceNorm over a random ``shape`` input; 1-D and 2-D
    blobs are one channel."""
    g = rng("instancenorm", shape, affine, eps)
    x = randn(g, shape, 3.0) + np.float32(offset)
    c = shape[0] if len(shape) >= 3 else 1
    params = {0: c, 2: affine}
    if eps is not None:
        params[1] = eps
    weights = [(randn(g, (c,)), 1), (randn(g, (c,)), 1)] if affine else []
    return params, weights, [x]


def case(backend, shape, affine=1, eps=None, offset=0.0, **kwargs):
    params, weights, inputs = instancenorm_case(shape, affine, eps, offset)
    one_value = int(np.prod(shape)) // params[0] == 1
    return check_norm(backend, "InstanceNorm", params, weights, inputs, one_value, **kwargs)


SHAPES = SHAPES_ALL + [(8, 5, 7), (12,), (8, 3), (4, 2, 3, 5)]


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("backend", backends("InstanceNorm"))
def test_instancenorm(shape, affine, backend):
    case(backend, shape, affine)


@pytest.mark.parametrize("eps", [1e-5, 0.5])
@pytest.mark.parametrize(
    "shape,affine,offset", [((6, 9, 11), 1, 40.0), ((8, 9, 11), 1, 40.0), ((3, 2, 9, 11), 0, -40.0)], ids=str
)
@pytest.mark.parametrize("backend", backends("InstanceNorm", grid=FP32))
def test_instancenorm_eps_and_offset(shape, affine, offset, eps, backend):
    case(backend, shape, affine, eps=eps, offset=offset)


@pytest.mark.parametrize("backend", backends("InstanceNorm"))
def test_not_in_place(backend):
    case(backend, (8, 5, 7), 1, lightmode=False)


@pytest.mark.slow
@pytest.mark.parametrize("backend", backends("InstanceNorm"))
def test_big_blob(backend):
    case(backend, (3, 227, 227), 1)


def test_instancenorm_rejects_wrong_channels(caplog):
    x = randn(rng("in-bad"), (5, 4, 4))
    g = rng("in-bad-w")
    weights = [(randn(g, (4,)), 1), (randn(g, (4,)), 1)]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("InstanceNorm", {0: 4, 2: 1}, weights, [x])
    assert ret != 0
    assert "InstanceNorm" in caplog.text and "5 channels" in caplog.text


@pytest.mark.gpu
def test_instancenorm_rejects_wrong_channels_on_the_gpu(caplog):
    g = rng("in-bad-vk")
    weights = [(randn(g, (4,)), 1), (randn(g, (4,)), 1)]
    x = randn(g, (8, 3, 3))
    text = make_param("InstanceNorm", {0: 4}, [x.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin(weights), [x], 1, **GPU_GRID["fp16s-pack"])
    assert ret != 0 and "blob has 8 channels" in caplog.text
