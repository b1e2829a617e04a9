"""PixelShuffle against the PyPI ncnn (exact): the cases of ncnn's tests/test_pixelshuffle.cpp
(factors 1-4, both channel orders, channels not a multiple of r*r), the layer and net paths,
each case on every backend (oracle.backends: the CPU and the GPU option grid), and bad params
and inputs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net

PATHS = ("layer", "net")

# (numpy shape, upscale_factor) of ncnn's cases, each run in both modes
CASES = [
    ((1, 7, 7), 1), ((8, 7, 7), 2), ((12, 7, 7), 2), ((64, 7, 7), 4), ((32, 7, 7), 2),
    ((48, 7, 7), 2), ((36, 7, 7), 3), ((72, 7, 7), 3), ((90, 7, 7), 3),
    ((8, 3, 8), 2), ((8, 3, 12), 2), ((8, 3, 13), 2), ((64, 3, 4), 4), ((64, 3, 5), 4),
    ((10, 3, 5), 3),  # 10 channels, r*r = 9: the last is ignored
]  # fmt: skip


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("shape,r", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("PixelShuffle"))
def test_pixelshuffle(shape, r, mode, backend):
    x = randn(rng("pixelshuffle", shape), shape)
    check(backend, "PixelShuffle", {0: r, 1: mode}, [], [x], paths=PATHS, tol=0.0, tol_fp32=0.0)


def _errors(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("params,word", [({0: 0}, "upscale_factor"), ({0: 2, 1: 2}, "mode")], ids=str)
def test_pixelshuffle_bad_params(caplog, params, word):
    x = np.ones((8, 3, 3), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("PixelShuffle", params, [], [x])
        assert ret != 0
        errors = _errors(caplog)
        assert len(errors) == 1 and "PixelShuffle" in errors[0] and word in errors[0], errors
        assert run_net(make_param("PixelShuffle", params, [x.shape]), make_bin([]), [x])[0] != 0


@pytest.mark.parametrize("shape", [(8, 3), (2, 3, 3), (4, 2, 3, 3)], ids=str)
def test_pixelshuffle_bad_inputs(caplog, shape):
    # not 3-D, or fewer channels than r*r
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("PixelShuffle", {0: 2}, [], [np.ones(shape, np.float32)])
    errors = _errors(caplog)
    assert ret != 0
    assert len(errors) == 1 and "PixelShuffle" in errors[0], errors
