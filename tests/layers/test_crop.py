"""Crop against the oracle: offsets with outw/outh/outd/outc (-233: to the end), far-side
offsets (woffset2..), the starts/ends/axes arrays (negative, -233, 0 and too-big ends), the
reference-blob form (shape and int roi), every rank; boxes that do not fit rejected."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

U = -233
SHAPES = [(7,), (64,), (7, 13), (16, 32), (1, 1, 1), (3, 7, 13), (16, 8, 8), (2, 3, 5, 7), (4, 6, 6, 6)]


# -- the cases, shared with test_crop_vulkan.py --------------------------------------------------


def crop_input(shape):
    return randn(rng("crop", shape), shape)


def _ncnn_keys(dims):
    """(offset, out, offset2) param ids per numpy axis of a blob of ``dims`` dims."""
    w, h, d, c = (0, 3, 6), (1, 4, 7), (13, 14, 15), (2, 5, 8)
    return {1: [w], 2: [h, w], 3: [c, h, w], 4: [c, d, h, w]}[dims]


OFFSET_MODES = range(4)


def offsets_params(shape, mode):
    """The offset / out / far-offset params of one box on every axis of ``shape``."""
    params = {}
    for (k_off, k_out, k_off2), n in zip(_ncnn_keys(len(shape)), shape, strict=True):
        off = min(1, n - 1)
        if mode == 0:  # offset and an explicit size
            params |= {k_off: off, k_out: max(1, n - off - 1)}
        elif mode == 1:  # offset, size to the end
            params |= {k_off: off, k_out: U}
        elif mode == 2:  # both offsets, size unset
            params |= {k_off: off // 2 if n > 2 else 0, k_off2: 1 if n > 2 else 0, k_out: U}
        else:  # an oversize out is limited by the far offset
            params |= {k_off: 0, k_out: n + 5, k_off2: 1 if n > 1 else 0}
    return params


def reference_offsets(shape, ref_shape):
    """Offsets that fit a ``ref_shape`` reference blob inside ``shape``."""
    dims = len(shape)
    offs = {0: min(1, shape[-1] - 1)}
    if dims >= 2:
        offs[1] = min(2, shape[-2] - ref_shape[-2])
    if dims >= 3:
        offs[2] = shape[0] - ref_shape[0]
    if dims == 4:
        offs[13] = 1
    return offs


# -- the CPU tests -------------------------------------------------------------------------------

_x = crop_input


@pytest.mark.parametrize("shape", SHAPES)
def test_offsets_and_sizes(shape):
    x = _x(shape)
    for mode in OFFSET_MODES:
        check_layer("Crop", offsets_params(shape, mode), [], [x], tol=0)


@pytest.mark.parametrize("shape", SHAPES)
def test_arrays_every_axis(shape):
    x = _x(shape)
    dims = len(shape)
    for axis in range(dims):
        n = shape[axis]
        cases = [(0, n), (U, U), (0, 0), (-n, 100), (U, -1 if n > 1 else U)]
        if n >= 3:
            cases += [(1, -1), (-2, U), (1, 2), (-3, -1), (2, 0)]
        for start, end in cases:
            for a in (axis, axis - dims):
                check_layer("Crop", {9: [start], 10: [end], 11: [a]}, [], [x], tol=0)


def test_arrays_without_axes_and_several_axes():
    x = _x((4, 6, 7, 8))
    check_layer("Crop", {9: [1, 0, 2, -3], 10: [3, U, -1, 100]}, [], [x], tol=0)
    check_layer("Crop", {9: [1, 2], 10: [-1, 5], 11: [3, 1]}, [], [x], tol=0)
    check_layer("Crop", {9: [1, 2, 3], 10: [-1, 5, 4], 11: [-1, 0, -3]}, [], [x], tol=0)
    y = _x((3, 7, 13))
    check_layer("Crop", {9: [1, 2, 3], 10: [3, 6, -2]}, [], [y], tol=0)


@pytest.mark.parametrize("shape", SHAPES)
def test_reference_blob(shape):
    ref_shape = tuple(max(1, n - 2) for n in shape)
    check_layer("Crop", reference_offsets(shape, ref_shape), [], [_x(shape), _x(ref_shape)], tol=0)


def test_reference_of_lower_rank_keeps_channels():
    x = _x((3, 7, 13))
    check_layer("Crop", {0: 2, 1: 1}, [], [x, _x((5, 9))], tol=0)
    check_layer("Crop", {0: 2}, [], [x, _x((9,))], tol=0)
    check_layer("Crop", {0: 1, 1: 1, 13: 1}, [], [_x((2, 3, 5, 7)), _x((4, 5))], tol=0)


@pytest.mark.parametrize(
    "shape,roi",
    [
        ((13,), [2, 0, 0, 7]),
        ((7, 13), [2, 1, 0, 9, 4]),
        ((3, 7, 13), [2, 1, 1, 9, 4, 2]),
        ((4, 6, 7, 8), [1, 2, 3, 1, 5, 3, 2, 2]),
    ],
)
def test_reference_roi_ints(shape, roi):
    roi_blob = np.array(roi, dtype=np.int32).view(np.float32)
    check_layer("Crop", {0: U}, [], [_x(shape), roi_blob], tol=0)


def test_big():
    x = _x((3, 227, 227))
    check_layer("Crop", {0: 10, 1: 20, 2: 1, 3: 200, 4: 100, 5: U}, [], [x], tol=0)
    check_layer("Crop", {9: [3], 10: [-3], 11: [-1]}, [], [x], tol=0)


def test_whole_blob_is_shared():
    x = _x((3, 7, 13))
    check_layer("Crop", {3: U, 4: U, 5: U}, [], [x], tol=0)


@pytest.mark.parametrize(
    "params,shape",
    [
        ({9: [10], 10: [U]}, (7,)),  # start past the end
        ({9: [-10], 10: [U]}, (7,)),  # start before the beginning
        ({9: [3], 10: [2]}, (7,)),  # empty
        ({9: [0], 10: [-10]}, (7,)),
        ({9: [0, 0], 10: [1, 1], 11: [0, 3]}, (3, 7, 13)),  # no axis 3
        ({9: [2], 10: [5], 11: [7]}, (13,)),  # the oracle rejects this too
        ({9: [0, 0], 10: [1]}, (7, 13)),  # fewer ends than axes
        ({0: 8, 3: U}, (7,)),  # offset past the end
        ({0: 1, 3: 0, 6: 1}, (7,)),  # outw left at 0: empty
        ({1: 1, 4: U}, (7, 13)),  # outw left at 0 on a 2-D blob
    ],
)
def test_bad_boxes(params, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Crop", params, [], [_x(shape)])
    assert ret != 0 and "Crop" in caplog.text


def test_bad_reference(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Crop", {0: 3}, [], [_x((7, 13)), _x((9, 13))])
        assert ret != 0
        ret, _ = run_layer("Crop", {0: U}, [], [_x((7, 13)), np.zeros(3, np.float32)])
        assert ret != 0
    assert "Crop" in caplog.text


def test_reference_form_without_reference(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Crop", {0: 1}, [], [_x((7, 13))])
    assert ret != 0 and "reference" in caplog.text
