"""Spectrogram against the PyPI ncnn oracle: ncnn's test_spectrogram forms — every power,
window_type, pad_type and normalized value, center on / off, onesided on / off, winlen
narrower than n_fft, odd n_fft, custom hoplen; bad params and inputs; one run inside a Vulkan
net."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, randn, rng, run_layer

TOL = 1e-5
CASES = [
    {0: 8},
    {0: 8, 1: 1, 2: 3, 3: 6, 4: 1},
    {0: 7, 1: 2, 4: 2, 6: 0, 7: 1},
    {0: 8, 1: 0, 5: 0, 8: 0, 7: 2, 4: 1},
    {0: 9, 1: 1, 6: 1, 8: 0},
    {0: 16, 2: 4, 4: 1, 7: 2, 1: 2},
    {0: 64, 2: 16, 4: 1, 1: 2},
]


@pytest.mark.parametrize("params", CASES, ids=str)
def test_spectrogram(params):
    check_layer("Spectrogram", params, [], [randn(rng("spectrogram"), (200,))], tol=TOL)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({0: 0}, (50,), "n_fft"),
        ({0: 8, 3: 9}, (50,), "winlen"),
        ({0: 8, 1: 3}, (50,), "power"),
        ({0: 8, 4: 3}, (50,), "window_type"),
        ({0: 8, 6: 3}, (50,), "pad_type"),
        ({0: 8, 7: 3}, (50,), "normalized"),
        ({0: 8}, (5, 10), "1-D"),
        ({0: 8, 5: 0}, (5,), "fewer than n_fft"),
    ],
    ids=str,
)
def test_spectrogram_rejects(params, shape, key, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Spectrogram", params, [], [np.zeros(shape, np.float32)])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "Spectrogram" in lines[0] and key in lines[0], lines


@pytest.mark.gpu
def test_spectrogram_in_vulkan_net():
    check_in_vulkan_net("Spectrogram", {0: 16, 2: 4, 4: 1, 1: 0}, [], [randn(rng("spectrogram-vk"), (100,))])
