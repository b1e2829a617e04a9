"""RMSNorm against the PyPI ncnn: every case of ncnn's tests/test_rmsnorm.cpp (each rank,
row / plane / channel slices, affine on and off, several eps), each on every backend (the CPU's
layer / in-place / net paths and the GPU option grid, packed blobs included), slices long
enough to take the GPU's chunked reduction, bad params and mismatched blobs. The oracle's x86
code sums squares in SIMD order."""

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

PATHS = ("layer", "inplace", "net")

# (numpy shape, affine_size, eps) of ncnn's cases, each run with affine 0 and 1
CASES = [
    ((2, 4, 6), 6, 0.01), ((6, 5, 4), 4, 0.01), ((8, 3, 3), 3, 0.002), ((12, 6, 5), 5, 0.02),
    ((16, 7, 4), 4, 0.02), ((24, 7, 6), 6, 0.001), ((32, 8, 5), 5, 0.001),
    ((2, 4, 6), 24, 0.01), ((6, 5, 4), 20, 0.01), ((8, 3, 3), 9, 0.002), ((12, 6, 5), 30, 0.02),
    ((16, 7, 4), 28, 0.02), ((24, 7, 6), 42, 0.001), ((32, 8, 5), 40, 0.001),
    ((2, 4), 4, 0.01), ((6, 5), 5, 0.01), ((8, 3), 3, 0.002), ((12, 6), 6, 0.02),
    ((16, 4), 4, 0.02), ((24, 7), 7, 0.001), ((32, 8), 8, 0.001),
    ((2,), 2, 0.01), ((6,), 6, 0.01), ((8,), 8, 0.002), ((12,), 12, 0.02),
    ((16,), 16, 0.02), ((24,), 24, 0.001), ((32,), 32, 0.001),
    ((8, 2, 3, 5), 5, 0.01), ((5, 2, 3, 4), 4, 0.01), ((8, 2, 3, 5), 15, 0.002),
    ((5, 2, 3, 4), 12, 0.002), ((8, 2, 3, 5), 30, 0.001), ((5, 2, 3, 4), 24, 0.001),
]  # fmt: skip


def _case(shape, affine_size, eps, affine):
    g = rng("rmsnorm", shape, affine_size, eps, affine)
    params = {0: affine_size, 1: eps, 2: affine}
    weights = [(randn(g, (affine_size,)), 1)] if affine else []
    return params, weights, [randn(g, shape, 2.0)]


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape,affine_size,eps", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("RMSNorm"))
def test_rmsnorm(shape, affine_size, eps, affine, backend):
    params, weights, inputs = _case(shape, affine_size, eps, affine)
    check(backend, "RMSNorm", params, weights, inputs, paths=PATHS)


# the default eps and rows of 227; whole channels of 681 values; and slices longer than the GPU
# reduction's chunk of 1024 values (its combine pass): 4-D depth planes, 3-D channels
LARGE = [((4, 3, 227), 227, None, 1), ((4, 3, 227), 681, 1e-6, 0), ((3, 5, 24, 60), 1440, 1e-5, 1),
         ((5, 48, 48), 2304, 1e-5, 0)]  # fmt: skip


@pytest.mark.parametrize("shape,affine_size,eps,affine", LARGE, ids=str)
@pytest.mark.parametrize("backend", backends("RMSNorm"))
def test_rmsnorm_defaults_and_large_slices(shape, affine_size, eps, affine, backend):
    g = rng("rmsnorm-big", shape, affine_size)
    params = {0: affine_size, 2: affine} | ({} if eps is None else {1: eps})
    weights = [(randn(g, (affine_size,)), 1)] if affine else []
    check(backend, "RMSNorm", params, weights, [randn(g, shape, 3.0)], paths=PATHS)


def _errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_rmsnorm_affine_without_size(caplog):
    x = np.ones((3, 4), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("RMSNorm", {}, [], [x])
        assert ret != 0
        errors = _errors(caplog)
        assert len(errors) == 1 and "RMSNorm" in errors[0] and "affine_size" in errors[0], errors
        assert run_net(make_param("RMSNorm", {}, [x.shape]), make_bin([]), [x])[0] != 0


def test_rmsnorm_missing_gamma(caplog):
    x = np.ones((3, 4), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert run_net(make_param("RMSNorm", {0: 4}, [x.shape]), make_bin([]), [x])[0] != 0
    assert any("RMSNorm" in e and "gamma" in e for e in _errors(caplog)), _errors(caplog)


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 5), (2, 2, 3, 5)], ids=str)
def test_rmsnorm_gamma_does_not_fit_the_blob(caplog, shape):
    # affine_size 4 matches no slice of these blobs: ncnn would read past gamma
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("RMSNorm", {0: 4}, [(np.ones(4, np.float32), 1)], [np.ones(shape, np.float32)])
    errors = _errors(caplog)
    assert ret != 0
    assert len(errors) == 1 and "RMSNorm" in errors[0] and "affine_size" in errors[0], errors


@pytest.mark.gpu
def test_rmsnorm_gamma_does_not_fit_the_blob_on_the_gpu(caplog):
    x = np.ones((2, 3, 5), np.float32)
    text = make_param("RMSNorm", {0: 4}, [x.shape])
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin([(np.ones(4, np.float32), 1)]), [x], **GPU_GRID["fp16s-pack"])
    assert ret != 0
    assert any("RMSNorm" in e and "affine_size" in e for e in _errors(caplog)), _errors(caplog)
