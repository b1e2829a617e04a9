"""PSROIPooling against the PyPI ncnn oracle: ncnn's test_psroipooling forms (pooled sizes,
output_dim, spatial_scale; rois inside, straddling and past the image, half-integer corners
that round), bad params and inputs, one run inside a Vulkan net."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _vulkan_sandwich import check_in_vulkan_net
from oracle import check_layer, randn, rng, run_layer

TOL = 1e-5
ROIS = [[1.5, 2.2, 9.7, 8.4], [-3, -2, 16, 10], [2.5, -0.5, 30, 40], [3, 3, 3.2, 3.4], [0, 0, 13, 11]]
# (params, output_dim * pooled_h * pooled_w channels)
PARAMS = [
    ({0: 3, 1: 2, 2: 1.0, 3: 2}, 12),
    ({0: 2, 1: 3, 2: 0.5, 3: 3}, 18),
    ({0: 7, 1: 7, 3: 1}, 49),
    ({0: 1, 1: 1, 2: 0.25, 3: 4}, 4),
]


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: str(p[0]))
@pytest.mark.parametrize("roi", ROIS, ids=str)
def test_psroipooling(roi, params):
    p, c = params
    x = randn(rng("psroipooling", c), (c, 12, 14))
    check_layer("PSROIPooling", p, [], [x, np.array(roi, np.float32)], tol=TOL)


@pytest.mark.parametrize(
    "params,shapes,key",
    [
        ({0: 0, 1: 2, 3: 1}, [(2, 4, 4), (4,)], "pooled_width"),
        ({0: 2, 1: 2, 3: 0}, [(4, 4, 4), (4,)], "output_dim"),
        ({0: 2, 1: 2, 3: 2}, [(7, 4, 4), (4,)], "input channels"),
        ({0: 2, 1: 2, 3: 1}, [(4, 4, 4), (2,)], "roi"),
        ({0: 2, 1: 2, 3: 1}, [(4, 4), (4,)], "3-D"),
    ],
    ids=str,
)
def test_psroipooling_rejects(params, shapes, key, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("PSROIPooling", params, [], [np.zeros(s, np.float32) for s in shapes])
    assert ret != 0
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(lines) == 1 and "PSROIPooling" in lines[0] and key in lines[0], lines


@pytest.mark.gpu
def test_psroipooling_in_vulkan_net():
    x = randn(rng("psroipooling-vk"), (12, 12, 14))
    roi = np.array([1.5, 2.2, 9.7, 8.4], np.float32)
    check_in_vulkan_net("PSROIPooling", {0: 3, 1: 2, 2: 1.0, 3: 2}, [], [x, roi])
