"""PriorBox against the PyPI ncnn: caffe (with and without the image blob) and mxnet styles.

The boxes are float32 arithmetic in the order of ncnn's source; the oracle's build evaluates
some of it in another order (e.g. h / w before size * h, a reciprocal for the image size), so
a few boxes differ in the last bit (measured relative L2 error <= 1e-7), hence TOL.
"""

from __future__ import annotations

import logging

import pytest
from oracle import check_layer, randn, rng, run_layer

TOL = 1e-6


def _feat(shape):
    return randn(rng("priorbox", shape), shape)


CAFFE = [
    # (feature (c, h, w), image (c, h, w), params)
    ((4, 19, 19), (3, 300, 300), {0: [60.0], 1: [111.0], 2: [2.0, 3.0], 13: 0.5}),
    ((2, 7, 13), (3, 100, 211), {0: [20.0, 35.0], 1: [30.0, 50.0], 2: [2.0], 7: 1, 13: 0.5}),
    ((1, 1, 1), (3, 64, 64), {0: [30.0], 2: [0.5], 7: 0}),
    ((3, 38, 38), (3, 300, 300), {0: [30.0], 1: [60.0], 2: [2.0], 8: 1, 13: 0.5}),
    ((1, 5, 6), (1, 33, 47), {0: [16.0], 2: [2.0, 0.5], 14: 1, 15: 1, 13: 0.5}),
    ((1, 5, 6), (1, 33, 47), {0: [16.0], 2: [1.5], 14: 1, 13: 0.5}),
    ((1, 4, 3), (1, 50, 50), {0: [12.0], 2: [], 15: 1, 13: 0.25}),
    ((2, 10, 10), (3, 300, 300), {0: [60.0], 1: [111.0], 2: [2.0], 3: 0.2, 4: 0.3, 5: 0.4, 6: 0.5}),
]


@pytest.mark.parametrize("feat,image,params", CAFFE)
def test_caffe_image_blob(feat, image, params):
    params = {9: -233, 10: -233, **params}
    check_layer("PriorBox", params, inputs=[_feat(feat), _feat(image)], tol=TOL)


@pytest.mark.parametrize(
    "params",
    [
        {0: [30.0], 1: [60.0], 2: [2.0], 9: 300, 10: 300, 11: 8.0, 12: 8.0, 13: 0.5},
        {0: [30.0], 2: [2.0, 3.0], 9: 320, 10: 240, 11: 16.0, 13: 0.5, 8: 1},
        {0: [45.0], 1: [99.0], 2: [2.0], 9: 300, 10: 300, 14: 1, 15: 1, 13: 0.5},
    ],
)
def test_caffe_fixed_image_size(params):
    # the image blob is still the second input but its size is not used
    check_layer("PriorBox", params, inputs=[_feat((3, 9, 11)), _feat((1, 8, 8))], tol=TOL)


@pytest.mark.parametrize(
    "feat,params",
    [
        ((4, 16, 16), {0: [0.2, 0.272], 2: [1.0, 2.0, 0.5]}),
        ((1, 7, 13), {0: [0.35], 2: [1.0, 3.0], 8: 1, 13: 0.5}),
        ((2, 3, 5), {0: [0.9, 0.4], 2: [1.0, 2.0], 11: 0.25, 12: 0.3, 13: 0.5, 8: 1}),
        ((1, 1, 1), {0: [0.5], 2: [1.0]}),
    ],
)
def test_mxnet_style(feat, params):
    params = {9: -233, 10: -233, **params}
    check_layer("PriorBox", params, inputs=[_feat(feat)], tol=TOL)


@pytest.mark.parametrize("case", ["max_count", "no_image", "no_input"])
def test_bad_inputs(case, caplog):
    feat, image = _feat((1, 4, 4)), _feat((1, 32, 32))
    params = {0: [10.0, 20.0], 2: [2.0], 9: -233, 10: -233}
    inputs = [feat, image]
    if case == "max_count":
        params[1] = [30.0]
    elif case == "no_image":
        params[1] = [30.0, 40.0]  # max sizes rule out the mxnet style
        inputs = [feat]
    else:
        inputs = []
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("PriorBox", params, [], inputs)
    assert ret != 0
    assert "PriorBox" in caplog.text
