"""Crop on the GPU over the option grid: offsets + sizes, far offsets, starts/ends/axes on
every axis, the reference-blob form, every rank, packed and unpacked channel counts, and
boxes that do not fit. The box builders are test_crop.py's."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer_gpu, make_bin, make_param, run_ncnn, run_net, run_net_gpu
from test_crop import OFFSET_MODES, U, crop_input, offsets_params, reference_offsets

from ncnn_c.layer import create_layer_vulkan
from ncnn_c.paramdict import ParamDict

pytestmark = pytest.mark.gpu


def check(*args, **kwargs):
    # a pure copy: fp32 results are bit-exact
    return check_layer_gpu(*args, tol_fp32=0.0, **kwargs)


FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]
SHAPES = [
    (7,),
    (64,),
    (7, 13),
    (16, 32),
    (1, 1, 1),
    (3, 7, 13),
    (16, 8, 8),
    (8, 5, 7),
    (2, 3, 5, 7),
    (8, 6, 6, 6),
]


_x = crop_input


@pytest.mark.parametrize("mode", OFFSET_MODES[:3])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_offsets_and_sizes(shape, mode):
    check("Crop", offsets_params(shape, mode), [], [_x(shape)])


@pytest.mark.parametrize("shape", [(13,), (12, 9), (8, 5, 7), (3, 7, 13), (8, 3, 5, 7)], ids=str)
def test_arrays_every_axis(shape):
    dims = len(shape)
    x = _x(shape)
    for axis in range(dims):
        n = shape[axis]
        for start, end in [(U, U), (1, -1), (-2, U), (0, 4), (4, 0)] if n >= 5 else [(1, U)]:
            check("Crop", {9: [start], 10: [end], 11: [axis - dims]}, [], [x], grid=FAST)


def test_arrays_several_axes():
    check("Crop", {9: [1, 0, 2, -3], 10: [3, U, -1, 100]}, [], [_x((4, 6, 7, 8))])
    check("Crop", {9: [4, 2], 10: [12, 5], 11: [0, 1]}, [], [_x((16, 7, 9))])


@pytest.mark.parametrize(
    "shape", [(13,), (7, 13), (3, 7, 13), (12, 6, 9), (2, 3, 5, 7), (8, 4, 5, 6)], ids=str
)
def test_reference_blob(shape):
    ref_shape = tuple(max(1, n - 2) for n in shape)
    if len(shape) >= 3 and shape[0] == 12:
        ref_shape = (4,) + ref_shape[1:]
    check("Crop", reference_offsets(shape, ref_shape), [], [_x(shape), _x(ref_shape)])


def test_reference_of_lower_rank_keeps_channels():
    check("Crop", {0: 2, 1: 1}, [], [_x((8, 7, 13)), _x((5, 9))])
    check("Crop", {0: 1, 1: 1, 13: 1}, [], [_x((2, 3, 5, 7)), _x((4, 5))])


def test_whole_blob_is_shared():
    check("Crop", {3: U, 4: U, 5: U}, [], [_x((8, 7, 13))])


def test_big():
    x = _x((3, 227, 227))
    check("Crop", {0: 10, 1: 20, 2: 1, 3: 200, 4: 100, 5: U}, [], [x], grid=FAST)


@pytest.mark.parametrize(
    "params,shape",
    [
        ({9: [10], 10: [U]}, (7,)),
        ({9: [3], 10: [2]}, (8, 7)),
        ({0: 8, 3: U}, (7,)),
        ({2: 9, 5: U}, (8, 3, 3)),
    ],
)
def test_bad_boxes(params, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Crop", params, [shape]), make_bin([]), [_x(shape)], use_packing_layout=True
        )
    assert ret != 0 and "Crop" in caplog.text


@pytest.mark.parametrize("pack", [False, True])
def test_roi_ints_stay_on_the_cpu(pack):
    """A reference blob holding the offsets as int32 data is read on the host: the layer
    declares itself CPU-only and the Vulkan net moves its blobs."""
    x = _x((4, 6, 7, 8))
    roi = np.array([1, 2, 3, 1, 5, 3, 2, 2], dtype=np.int32).view(np.float32)
    text = make_param("Crop", {0: U}, [x.shape, roi.shape])
    ret, ref = run_ncnn(text, make_bin([]), [x, roi])
    assert ret == 0
    ret, got = run_net(text, make_bin([]), [x, roi], use_vulkan=True, use_packing_layout=pack)
    assert ret == 0
    np.testing.assert_array_equal(got[0], ref[0])
    layer = create_layer_vulkan("Crop")
    pd = ParamDict()
    pd.set(0, U)
    assert layer.load_param(pd) == 0 and not layer.support_vulkan
