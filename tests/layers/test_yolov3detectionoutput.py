"""Yolov3DetectionOutput against the PyPI ncnn: several maps with masks, ties, empty output."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _detect_oracle import check_detect
from oracle import randn, rng, run_layer

BIASES = [10.0, 13.0, 16.0, 30.0, 33.0, 23.0, 30.0, 61.0, 62.0, 45.0, 59.0, 119.0, 116.0, 90.0, 156.0, 198.0]
BIASES += [373.0, 326.0]
# ncnn stores the mask as floats (an int array fails to load in the oracle)
MASK = [6.0, 7.0, 8.0, 3.0, 4.0, 5.0, 0.0, 1.0, 2.0]


def _blob(key, num_box, num_class, h, w, ties=False):
    g = rng("yolov3", key)
    x = randn(g, (num_box, 5 + num_class, h, w), 1.5)
    x[:, 4] -= 3.0
    peaks = g.random((num_box, h, w)) < 0.15
    x[:, 4][peaks] += 6.0
    if ties:
        x = np.round(x)
    return x.reshape(num_box * (5 + num_class), h, w).astype(np.float32)


def _params(num_class, num_box, n_maps, extra=None):
    return {
        0: num_class,
        1: num_box,
        4: BIASES,
        5: MASK[: num_box * n_maps],
        6: [32.0, 16.0, 8.0][:n_maps],
        **(extra or {}),
    }


def test_three_maps():
    maps = [_blob(("m", s), 3, 6, s, s) for s in (5, 10, 20)]
    p = _params(6, 3, 3, {2: 0.3, 3: 0.45})
    check_detect("Yolov3DetectionOutput", p, maps, expect_rows=True)


@pytest.mark.parametrize(
    "num_box,num_class,hw,extra",
    [
        (3, 80, (13, 13), {}),  # defaults: threshold 0.01, nms 0.45
        (2, 3, (7, 13), {2: 0.4, 3: 0.3}),
        (1, 1, (1, 1), {2: 0.0}),
        (3, 2, (9, 6), {2: 0.2, 3: 0.7}),
    ],
)
def test_one_map(num_box, num_class, hw, extra):
    x = _blob((num_box, num_class, hw), num_box, num_class, *hw)
    p = {**_params(num_class, num_box, 1, extra), 6: [24.0]}
    check_detect("Yolov3DetectionOutput", p, [x], expect_rows=True)


def test_tied_scores():
    maps = [_blob(("ties", s), 3, 2, s, s, ties=True) for s in (8, 16)]
    p = _params(2, 3, 2, {2: 0.25, 3: 0.5})
    ref, _ = check_detect("Yolov3DetectionOutput", p, maps, expect_rows=True)
    assert len(np.unique(ref[0][:, 1])) < ref[0].shape[0]


def test_nothing_detected_is_empty():
    x = _blob("empty", 3, 4, 6, 6)
    check_detect("Yolov3DetectionOutput", _params(4, 3, 1, {2: 1.5}), [x], expect_rows=False)


@pytest.mark.parametrize("case", ["channels", "mask_short", "mask_range", "scale_short", "dims"])
def test_bad_inputs(case, caplog):
    maps = [_blob("bad-a", 3, 2, 4, 4), _blob("bad-b", 3, 2, 8, 8)]
    p = _params(2, 3, 2)
    if case == "channels":
        p[0] = 3
    elif case == "mask_short":
        p[5] = MASK[:4]
    elif case == "mask_range":
        p[5] = [0.0, 1.0, 2.0, 3.0, 4.0, 12.0]
    elif case == "scale_short":
        p[6] = [32.0]
    else:
        maps[1] = maps[1][0]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Yolov3DetectionOutput", p, [], maps)
    assert ret != 0 and "Yolov3DetectionOutput" in caplog.text
