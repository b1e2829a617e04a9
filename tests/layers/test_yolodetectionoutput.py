"""YoloDetectionOutput against the PyPI ncnn: one and several maps, ties, the in-place empty case."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _detect_oracle import check_detect, compare_detections
from oracle import assert_close, randn, rng, run_layer

BIASES = [1.08, 1.19, 3.42, 4.41, 6.63, 11.38, 9.42, 5.11, 16.62, 10.52]
PATHS = ("layer", "net", "inplace")


def _compare(got, ref, what):
    if ref.ndim == 2 and ref.shape[1] == 6:
        return compare_detections(got, ref, what)
    # nothing detected: the first input with its class channels soft-maxed, as ncnn leaves it
    return assert_close(got, ref, 1e-5, what)


def _blob(key, num_box, num_class, h, w, ties=False):
    g = rng("yolo", key)
    x = randn(g, (num_box, 5 + num_class, h, w), 1.5)
    x[:, 4] -= 2.0  # objectness mostly low ...
    peaks = g.random((num_box, h, w)) < 0.15
    x[:, 4][peaks] += 5.0  # ... with a few strong cells
    if ties:
        x = np.round(x)  # integer logits: many equal confidences
    return x.reshape(num_box * (5 + num_class), h, w).astype(np.float32)


@pytest.mark.parametrize(
    "num_box,num_class,hw,params",
    [
        (5, 20, (13, 13), {}),  # defaults: threshold 0.01, nms 0.45
        (2, 3, (7, 13), {2: 0.3, 3: 0.3}),
        (3, 1, (1, 1), {2: 0.05}),
        (5, 4, (16, 9), {2: 0.2, 3: 0.6}),
    ],
)
def test_one_map(num_box, num_class, hw, params):
    x = _blob((num_box, num_class, hw), num_box, num_class, *hw)
    p = {0: num_class, 1: num_box, 4: BIASES[: 2 * num_box], **params}
    check_detect("YoloDetectionOutput", p, [x], compare=_compare, paths=PATHS, expect_rows=True)


def test_two_maps():
    a = _blob("two-a", 3, 4, 13, 13)
    b = _blob("two-b", 3, 4, 7, 7)
    p = {0: 4, 1: 3, 2: 0.25, 3: 0.4, 4: BIASES[:6]}
    check_detect("YoloDetectionOutput", p, [a, b], compare=_compare, paths=PATHS, expect_rows=True)


def test_tied_scores():
    # one class, so the class probability is exactly 1 and equal objectness logits give equal
    # confidences in both implementations; with several classes ncnn's vectorised softmax
    # rounds the same logits differently by cell position (measured: 1 ulp), so ties differ
    x = _blob("ties", 2, 1, 12, 12, ties=True)
    p = {0: 1, 1: 2, 2: 0.2, 3: 0.5, 4: BIASES[:4]}
    ref, _ = check_detect("YoloDetectionOutput", p, [x], compare=_compare, paths=PATHS, expect_rows=True)
    assert len(np.unique(ref[0][:, 1])) < ref[0].shape[0]


def test_nothing_detected_leaves_softmaxed_input():
    x = _blob("empty", 2, 3, 5, 6)
    p = {0: 3, 1: 2, 2: 1.5, 4: BIASES[:4]}  # a confidence can never reach 1.5
    ref, _ = check_detect("YoloDetectionOutput", p, [x], compare=_compare, paths=PATHS, expect_rows=True)
    assert ref[0].shape == x.shape and not np.allclose(ref[0], x)


@pytest.mark.parametrize("case", ["channels", "biases", "dims"])
def test_bad_inputs(case, caplog):
    x = _blob("bad", 2, 3, 4, 4)
    p = {0: 3, 1: 2, 4: BIASES[:4]}
    if case == "channels":
        p[0] = 4
    elif case == "biases":
        p[4] = BIASES[:3]
    else:
        x = x[0]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("YoloDetectionOutput", p, [], [x])
    assert ret != 0 and "YoloDetectionOutput" in caplog.text
