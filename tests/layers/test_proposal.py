"""Proposal against the PyPI ncnn: rois and scores in ncnn's order, top-N cuts, ties, failures."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _detect_oracle import oracle_outputs
from oracle import assert_close, make_bin, make_param, net_available, randn, rng, run_layer, run_net

A = 9


def _inputs(key, h, w, stride=16, scale=1.0, ties=False, delta=0.3):
    g = rng("proposal", key)
    score = randn(g, (2 * A, h, w), 2.0)
    if ties:
        score = np.round(score * 2) / 2  # few distinct levels: the order among ties is ncnn's
    bbox = randn(g, (4 * A, h, w), delta)
    im_info = np.array([h * stride, w * stride, scale], np.float32)
    return [score.astype(np.float32), bbox, im_info]


def _check(params, inputs, n_outputs=2):
    param_text = make_param("Proposal", params, [x.shape for x in inputs], n_outputs)
    ret, ref = oracle_outputs(param_text, make_bin([]), inputs, n_outputs)
    assert ret == 0, f"oracle failed ({ret})"
    assert ref[0].shape[0] > 1
    paths = {"layer": run_layer("Proposal", params, [], inputs, n_outputs)}
    if net_available():
        paths["net"] = run_net(param_text, make_bin([]), inputs, n_outputs)
    for path, (ret, got) in paths.items():
        assert ret == 0, f"{path} failed ({ret})"
        for i in range(n_outputs):
            assert_close(got[i], ref[i], 1e-5, f"Proposal {path} out{i} {params}")
    return ref


@pytest.mark.parametrize(
    "key,h,w,params",
    [
        ("small", 5, 7, {2: 100, 3: 20, 4: 0.7}),
        ("defaults", 14, 14, {}),
        ("stride8", 9, 13, {0: 8, 1: 8, 5: 4, 4: 0.5, 3: 50}),
        ("no_pre_cut", 6, 6, {2: 0, 3: 1000, 4: 0.6, 5: 8}),
        ("tight", 20, 17, {2: 300, 3: 64, 4: 0.3}),
        ("one_cell", 1, 1, {5: 2, 4: 0.9}),
    ],
)
def test_proposal(key, h, w, params):
    _check(params, _inputs(key, h, w, stride=params.get(0, 16)))


def test_scaled_image_and_min_size():
    # im_info scale multiplies min_size: many small boxes are dropped
    _check({5: 24, 4: 0.7, 3: 100}, _inputs("scaled", 10, 12, scale=1.6))


def test_tied_scores():
    ref = _check({2: 400, 3: 120, 4: 0.65}, _inputs("ties", 12, 12, ties=True))
    assert len(np.unique(ref[1])) < ref[1].size


def test_roi_output_only():
    _check({3: 40}, _inputs("one_top", 8, 8), n_outputs=1)


def test_nothing_survives_fails_like_ncnn(caplog):
    # every box is shrunk far below min_size: ncnn cannot create an empty roi blob and fails
    inputs = _inputs("empty", 4, 4, delta=0.0)
    inputs[1].reshape(A, 4, 4, 4)[:, 2:] = -8.0  # dw and dh of every anchor
    params = {5: 4000}
    param_text = make_param("Proposal", params, [x.shape for x in inputs], 2)
    ret_ref, _ = oracle_outputs(param_text, make_bin([]), inputs, 2)
    assert ret_ref != 0
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Proposal", params, [], inputs, 2)
    assert ret == ret_ref
    assert "Proposal" in caplog.text


@pytest.mark.parametrize("case", ["score_2d", "few_channels", "bbox_shape", "short_info", "two_inputs"])
def test_bad_inputs(case, caplog):
    inputs = _inputs("bad", 4, 4)
    if case == "score_2d":
        inputs[0] = inputs[0][0]
    elif case == "few_channels":
        inputs[0] = inputs[0][:10]
    elif case == "bbox_shape":
        inputs[1] = inputs[1][:, :3]
    elif case == "short_info":
        inputs[2] = inputs[2][:2]
    else:
        inputs = inputs[:2]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Proposal", {}, [], inputs, 2)
    assert ret != 0 and "Proposal" in caplog.text
