"""ROIPooling against the PyPI ncnn (max pooling is exact, tol=0)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

# Bin edges never fall on a whole row / column inside the map (gcd(roi size, pooled) = 1, and
# the far edge at or past the map border): there the oracle's approximate reciprocal of the
# pooled size can add one row (see roipooling.py), which is CPU-dependent and not tested.
CASES = [
    # (feature shape, roi, pooled_w, pooled_h, spatial_scale)
    ((3, 7, 13), [1.0, 2.0, 11.0, 6.0], 3, 2, 1.0),
    ((8, 20, 26), [100.0, 60.0, 404.0, 300.0], 7, 7, 0.0625),
    ((1, 1, 1), [0.0, 0.0, 0.0, 0.0], 2, 2, 1.0),
    ((4, 16, 16), [-5.0, -3.0, 20.0, 20.0], 5, 5, 1.0),  # partly outside: clipped bins
    ((4, 16, 16), [30.0, 30.0, 40.0, 45.0], 2, 3, 1.0),  # fully outside: every bin empty -> 0
    ((2, 20, 24), [3.4, 2.5, 3.6, 9.5], 5, 5, 1.0),  # thinner than the grid, .5 rounding
    ((2, 20, 24), [17.5, 4.0, 2.5, 12.0], 3, 3, 0.5),  # x2 < x1: one-column region
    ((16, 227, 227), [12.0, 40.0, 240.0, 230.0, 0.0], 6, 6, 1.0),  # extra values ignored
]


@pytest.mark.parametrize("shape,roi,pw,ph,scale", CASES)
def test_roipooling(shape, roi, pw, ph, scale):
    x = randn(rng("roipool", shape), shape)
    params = {0: pw, 1: ph, 2: scale}
    check_layer("ROIPooling", params, inputs=[x, np.asarray(roi, np.float32)], tol=0)


def test_defaults_invalid(caplog):
    # pooled sizes default to 0, which cannot pool anything
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("ROIPooling", {}, [], [np.zeros((1, 4, 4), np.float32), np.zeros(4, np.float32)])
    assert ret != 0 and "ROIPooling" in caplog.text


@pytest.mark.parametrize("case", ["feat_2d", "short_roi", "one_input"])
def test_bad_inputs(case, caplog):
    x = np.zeros((2, 5, 5), np.float32)
    roi = np.array([0, 0, 3, 3], np.float32)
    inputs = {"feat_2d": [x[0], roi], "short_roi": [x, roi[:3]], "one_input": [x]}[case]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("ROIPooling", {0: 2, 1: 2}, [], inputs)
    assert ret != 0 and "ROIPooling" in caplog.text
