"""InverseSpectrogram against the PyPI ncnn oracle: ncnn's test_inversespectrogram forms —
every returns, window_type and normalized value, center on / off, onesided and full inputs,
odd n_fft, custom hoplen; bad params and inputs; one run inside a Vulkan net. Samples the
windows never cover divide 0 by 0 as in ncnn (nan, compared as nan)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, randn, rng, run_layer

TOL = 1e-5
# (params, freqs)
CASES = [
    ({0: 8, 4: 1}, 5),
    ({0: 8, 1: 1, 2: 2, 4: 1}, 5),
    ({0: 8, 1: 2, 2: 2, 4: 2, 5: 0, 7: 1}, 5),
    ({0: 8, 1: 0, 4: 1, 7: 1}, 8),
    ({0: 7, 1: 0, 2: 2, 4: 1, 7: 2}, 7),
    ({0: 8, 1: 1, 2: 3, 3: 6, 4: 1}, 8),
    ({0: 64, 1: 1, 2: 16, 4: 1}, 33),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[0]))
def test_inversespectrogram(case):
    params, freqs = case
    x = randn(rng("inversespectrogram", freqs), (freqs, 12, 2))
    check_layer("InverseSpectrogram", params, [], [x], tol=TOL)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 0}, (5, 4, 2), "n_fft"),
        ({0: 8, 2: 0}, (5, 4, 2), "hoplen"),
        ({0: 8, 1: 3}, (5, 4, 2), "returns"),
        ({0: 8, 4: 5}, (5, 4, 2), "window_type"),
        ({0: 8}, (6, 4, 2), "freqs"),
        ({0: 8}, (5, 4, 3), "freqs"),
        ({0: 8}, (5, 8), "freqs"),
    ],
    ids=str,
)
def test_inversespectrogram_rejects(params, shape, key, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("InverseSpectrogram", params, [], [np.zeros(shape, np.float32)])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "InverseSpectrogram" in lines[0] and key in lines[0], lines


@pytest.mark.gpu
def test_inversespectrogram_in_vulkan_net():
    x = randn(rng("inversespectrogram-vk"), (5, 12, 2))
    check_in_vulkan_net("InverseSpectrogram", {0: 8, 1: 1, 2: 2}, [], [x])
