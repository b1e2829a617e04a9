"""DetectionOutput against the PyPI ncnn: caffe and mxnet layouts, ties, top-k cuts, empty output."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _detect_oracle import check_detect
from oracle import randn, rng, run_layer


def _priors(g, num_prior: int, clusters: int = 6) -> np.ndarray:
    """Normalised prior boxes grouped around a few centres, so decoded boxes overlap."""
    centres = g.uniform(0.2, 0.8, (clusters, 2))
    c = centres[g.integers(0, clusters, num_prior)] + g.normal(0, 0.03, (num_prior, 2))
    wh = g.uniform(0.1, 0.4, (num_prior, 2))
    return np.concatenate([c - wh / 2, c + wh / 2], axis=1).astype(np.float32)


def _caffe_inputs(key, num_prior: int, num_class: int, ties: bool = False, var=(0.1, 0.1, 0.2, 0.2)):
    g = rng("detout", key)
    priors = _priors(g, num_prior)
    pb = np.stack([priors.reshape(-1), np.tile(np.asarray(var, np.float32), num_prior)]).astype(np.float32)
    loc = randn(g, (num_prior * 4,), 0.7)
    if ties:
        # a few score levels shared by many priors: the order among equal scores is ncnn's
        conf = g.choice(np.array([0.05, 0.35, 0.6, 0.9], np.float32), (num_prior, num_class))
    else:
        conf = g.uniform(0, 1, (num_prior, num_class)).astype(np.float32)
    # background below 1 - threshold for every prior: ncnn leaves other priors' boxes undefined
    conf[:, 0] = g.uniform(0, 0.3, num_prior)
    return loc, conf.astype(np.float32).reshape(-1), pb


@pytest.mark.parametrize(
    "num_prior,num_class,params",
    [
        (1, 2, {0: 2, 1: 0.45, 4: 0.1}),
        (37, 3, {0: 3, 1: 0.45, 4: 0.3}),
        (200, 5, {0: 5, 1: 0.3, 2: 50, 3: 40, 4: 0.4}),
        (500, 21, {0: 21, 1: 0.45, 2: 100, 3: 200, 4: 0.6}),
        (120, 4, {0: 4, 1: 0.6, 2: 7, 3: 5, 4: 0.2}),  # both top-k cuts bite
        (90, 3, {0: 3}),  # defaults: nms 0.05, top 300 / 100, threshold 0.5
    ],
)
def test_caffe_layout(num_prior, num_class, params):
    inputs = _caffe_inputs((num_prior, num_class), num_prior, num_class)
    ref, err = check_detect("DetectionOutput", params, inputs, expect_rows=True)
    assert err <= 1e-5


@pytest.mark.parametrize("num_prior,num_class", [(64, 3), (300, 6)])
def test_tied_scores(num_prior, num_class):
    inputs = _caffe_inputs(("ties", num_prior), num_prior, num_class, ties=True)
    ref, _ = check_detect("DetectionOutput", {0: num_class, 1: 0.5, 2: 40, 4: 0.3}, inputs, expect_rows=True)
    assert len(np.unique(ref[0][:, 1])) < ref[0].shape[0]  # the case really has ties


def test_variances_from_priorbox_and_2d_inputs():
    loc, conf, pb = _caffe_inputs("var", 80, 4, var=(0.2, 0.05, 0.3, 0.1))
    # location (P, 4) and confidence (P, C) as 2-D blobs read the same
    check_detect("DetectionOutput", {0: 4, 1: 0.4, 4: 0.3}, [loc.reshape(80, 4), conf.reshape(80, 4), pb])


def test_mxnet_layout():
    g = rng("detout-mxnet")
    num_prior, num_class = 150, 4
    priors = _priors(g, num_prior)
    loc = randn(g, (num_prior * 4,), 0.7)
    conf = g.uniform(0, 1, (num_class, num_prior)).astype(np.float32)
    conf[0] = g.uniform(0, 0.3, num_prior)
    params = {0: -233, 1: 0.4, 4: 0.5, 5: 0.2, 6: 0.15, 7: 0.25, 8: 0.3}
    ref, err = check_detect("DetectionOutput", params, [loc, conf, priors], expect_rows=True)
    assert err <= 1e-5


def test_nothing_detected_is_empty():
    loc, conf, pb = _caffe_inputs("empty", 40, 3)
    conf = conf.reshape(40, 3)
    conf[:, 1:] = 0.2
    check_detect("DetectionOutput", {0: 3, 4: 0.5}, [loc, conf.reshape(-1), pb], expect_rows=False)


@pytest.mark.slow
def test_ssd300_size():
    inputs = _caffe_inputs("ssd300", 8732, 21)
    check_detect("DetectionOutput", {0: 21, 1: 0.45, 2: 400, 3: 200, 4: 0.6}, inputs, expect_rows=True)


@pytest.mark.parametrize(
    "case,params",
    [
        ("priorbox_1d", {0: 3}),
        ("short_conf", {0: 3}),
        ("short_loc", {0: 3}),
        ("two_inputs", {0: 3}),
        ("neg_keep", {0: 3, 3: -1}),
        ("neg_class", {0: -2}),
    ],
)
def test_bad_inputs(case, params, caplog):
    loc, conf, pb = _caffe_inputs("bad", 10, 3)
    inputs = [loc, conf, pb]
    if case == "priorbox_1d":
        inputs[2] = pb[0]
    elif case == "short_conf":
        inputs[1] = conf[:20]
    elif case == "short_loc":
        inputs[0] = loc[:30]
    elif case == "two_inputs":
        inputs = inputs[:2]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("DetectionOutput", params, [], inputs)
    assert ret != 0
    assert "DetectionOutput" in caplog.text
