"""ROIAlign against the PyPI ncnn oracle (its x86 form: version 1 moves samples in the last
row / column onto it, as detectron2 does): versions 0 and 1, aligned, sampling_ratio,
spatial_scale, rois inside, straddling and past the image edges; bad params; one run inside a
Vulkan net. A version 0 roi far past the bottom-right corner makes ncnn read past the blob's
end (undefined), so no case does that."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, randn, rng, run_layer

TOL = 1e-5
ROIS = [[1.5, 2.2, 9.7, 8.4], [-3, -2, 16, 10], [-2, -1, 20, 8], [3, 3, 3.5, 3.2], [0, 0, 13, 11]]
PARAMS = [
    {0: 3, 1: 2},
    {0: 4, 1: 3, 2: 0.5, 3: 2},
    {0: 3, 1: 3, 4: 1},
    {0: 2, 1: 4, 5: 1},
    {0: 3, 1: 2, 5: 1, 4: 1, 3: 2},
    {0: 3, 1: 2, 5: 1, 2: 2.0},
]


@pytest.mark.parametrize("params", PARAMS, ids=str)
@pytest.mark.parametrize("roi", ROIS, ids=str)
def test_roialign(roi, params):
    x = randn(rng("roialign"), (3, 12, 14))
    check_layer("ROIAlign", params, [], [x, np.array(roi, np.float32)], tol=TOL)


def test_roialign_large():
    x = randn(rng("roialign-large"), (32, 40, 48))
    check_layer(
        "ROIAlign", {0: 7, 1: 7, 2: 0.25, 5: 1, 4: 1}, [], [x, np.array([20, 16, 150, 120], np.float32)]
    )


@pytest.mark.parametrize(
    "params,shapes,key",
    [
        ({0: 0, 1: 2}, [(2, 4, 4), (4,)], "pooled_width"),
        ({0: 2, 1: -1}, [(2, 4, 4), (4,)], "pooled_height"),
        ({0: 2, 1: 2, 5: 2}, [(2, 4, 4), (4,)], "version"),
        ({0: 2, 1: 2}, [(2, 4, 4), (3,)], "roi"),
        ({0: 2, 1: 2}, [(4, 4), (4,)], "3-D"),
    ],
    ids=str,
)
def test_roialign_rejects(params, shapes, key, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("ROIAlign", params, [], [np.zeros(s, np.float32) for s in shapes])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "ROIAlign" in lines[0] and key in lines[0], lines


@pytest.mark.gpu
def test_roialign_in_vulkan_net():
    x = randn(rng("roialign-vk"), (3, 12, 14))
    check_in_vulkan_net("ROIAlign", {0: 3, 1: 2, 5: 1}, [], [x, np.array([1.5, 2.2, 9.7, 8.4], np.float32)])
