"""Spectrogram against the PyPI ncnn oracle: ncnn's test_spectrogram forms — every power,
window_type, pad_type and normalized value, center on / off, onesided on / off, winlen
narrower than n_fft, odd n_fft, custom hoplen — each case on every backend (oracle.backends:
the CPU and the GPU option grid); bad params and inputs, on the CPU and in a Vulkan net."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

TOL = 1e-5
# (params, signal length)
CASES = [
    ({0: 8}, 200),
    ({0: 8, 1: 1, 2: 3, 3: 6, 4: 1}, 200),
    ({0: 7, 1: 2, 4: 2, 6: 0, 7: 1}, 200),
    ({0: 8, 1: 0, 5: 0, 8: 0, 7: 2, 4: 1}, 200),
    ({0: 9, 1: 1, 6: 1, 8: 0}, 200),
    ({0: 16, 2: 4, 4: 1, 7: 2, 1: 2}, 200),
    ({0: 64, 2: 16, 4: 1, 1: 2}, 200),
    ({0: 16, 2: 4, 4: 1, 1: 0}, 100),
    ({0: 12, 1: 0, 2: 5, 4: 2, 6: 1, 7: 1, 8: 0}, 37),
    ({0: 10, 1: 1, 5: 0, 3: 7, 4: 1}, 10),
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("Spectrogram"))
def test_spectrogram(case, backend):
    params, n = case
    check(backend, "Spectrogram", params, [], [randn(rng("spectrogram", n), (n,))], tol=TOL)


REJECTS = [
    ({0: 0}, (50,), "n_fft"),
    ({0: 8, 3: 9}, (50,), "winlen"),
    ({0: 8, 1: 3}, (50,), "power"),
    ({0: 8, 4: 3}, (50,), "window_type"),
    ({0: 8, 6: 3}, (50,), "pad_type"),
    ({0: 8, 7: 3}, (50,), "normalized"),
    ({0: 8}, (5, 10), "1-D"),
    ({0: 8, 5: 0}, (5,), "fewer than n_fft"),
    ({0: 8}, (4,), "reflect"),
]


@pytest.mark.parametrize("params,shape,key", REJECTS, ids=str)
def test_spectrogram_rejects(params, shape, key, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Spectrogram", params, [], [np.zeros(shape, np.float32)])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "Spectrogram" in lines[0] and key in lines[0], lines


@pytest.mark.gpu
@pytest.mark.parametrize("params,shape,key", REJECTS[-3:], ids=str)
def test_spectrogram_rejects_gpu(params, shape, key, caplog):
    # inputs the GPU form refuses in forward: the same line as the CPU's
    text = make_param("Spectrogram", params, [shape])
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin([]), [np.zeros(shape, np.float32)])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("Spectrogram" in line and key in line for line in lines), lines
