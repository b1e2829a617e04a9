"""InverseSpectrogram against the PyPI ncnn oracle: ncnn's test_inversespectrogram forms —
every returns, window_type and normalized value, center on / off, onesided and full inputs,
odd n_fft, custom hoplen — each case on every backend (oracle.backends: the CPU and the GPU
option grid); bad params and inputs, on the CPU and in a Vulkan net. Samples no window
weight reaches stay 0, as in ncnn (a winlen 7 hamming window in n_fft 9, not centred)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import backends, check, make_bin, make_param, randn, rng, run_layer, run_net_gpu

TOL = 1e-5
# (params, freqs, frames)
CASES = [
    ({0: 8, 4: 1}, 5, 12),
    ({0: 8, 1: 1, 2: 2, 4: 1}, 5, 12),
    ({0: 8, 1: 2, 2: 2, 4: 2, 5: 0, 7: 1}, 5, 12),
    ({0: 8, 1: 0, 4: 1, 7: 1}, 8, 12),
    ({0: 7, 1: 0, 2: 2, 4: 1, 7: 2}, 7, 12),
    ({0: 8, 1: 1, 2: 3, 3: 6, 4: 1}, 8, 12),
    ({0: 64, 1: 1, 2: 16, 4: 1}, 33, 12),
    ({0: 8, 1: 1, 2: 2}, 5, 12),
    ({0: 9, 1: 2, 2: 3, 3: 7, 4: 2, 5: 0}, 5, 6),
    ({0: 12, 1: 0, 2: 5, 4: 1, 7: 2}, 12, 3),
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("backend", backends("InverseSpectrogram"))
def test_inversespectrogram(case, backend):
    params, freqs, frames = case
    x = randn(rng("inversespectrogram", freqs, frames), (freqs, frames, 2))
    check(backend, "InverseSpectrogram", params, [], [x], tol=TOL)


REJECTS = [
    ({0: 0}, (5, 4, 2), "n_fft"),
    ({0: 8, 2: 0}, (5, 4, 2), "hoplen"),
    ({0: 8, 1: 3}, (5, 4, 2), "returns"),
    ({0: 8, 4: 5}, (5, 4, 2), "window_type"),
    ({0: 8}, (6, 4, 2), "freqs"),
    ({0: 8}, (5, 4, 3), "freqs"),
    ({0: 8}, (5, 8), "freqs"),
]


@pytest.mark.parametrize("params,shape,key", REJECTS, ids=str)
def test_inversespectrogram_rejects(params, shape, key, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("InverseSpectrogram", params, [], [np.zeros(shape, np.float32)])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "InverseSpectrogram" in lines[0] and key in lines[0], lines


@pytest.mark.gpu
@pytest.mark.parametrize("params,shape,key", REJECTS[-3:], ids=str)
def test_inversespectrogram_rejects_gpu(params, shape, key, caplog):
    # inputs the GPU form refuses in forward: the same line as the CPU's
    text = make_param("InverseSpectrogram", params, [shape])
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(text, make_bin([]), [np.zeros(shape, np.float32)])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("InverseSpectrogram" in line and key in line for line in lines), lines
