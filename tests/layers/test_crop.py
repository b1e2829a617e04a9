"""Crop against the oracle: offsets with outw/outh/outd/outc (-233: to the end), far-side
offsets (woffset2..), the starts/ends/axes arrays (negative, -233, 0 and too-big ends), the
reference-blob form, every rank, each case on every backend (oracle.backends: the CPU, and the
GPU option grid, bit-exact in fp32: a crop is a copy); then the int roi form (which stays on
the CPU in a Vulkan net), and boxes that do not fit rejected on both."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    SPOT_GRID,
    backends,
    check,
    check_layer,
    make_bin,
    make_param,
    randn,
    rng,
    run_layer,
    run_ncnn,
    run_net,
    run_net_gpu,
)

from ncnn_c.layer import create_layer_vulkan
from ncnn_c.paramdict import ParamDict

U = -233
SHAPES = [(7,), (64,), (7, 13), (16, 32), (1, 1, 1), (3, 7, 13), (16, 8, 8), (2, 3, 5, 7), (4, 6, 6, 6)]


def packed(*shape):
    """A shape only the GPU's cases had, whose channels (or rows) it packs by 4: in the slow
    run only, with the packed GPU sets (the main run's GPU set, fp32, does not pack)."""
    return pytest.param(shape, marks=pytest.mark.slow, id=str(shape))


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


_x = crop_input


def crop(backend, params, inputs):
    # a pure copy: fp32 results are bit-exact on every backend
    return check(backend, "Crop", params, [], inputs, tol=0, tol_fp32=0.0)


@pytest.mark.parametrize("mode", OFFSET_MODES)
@pytest.mark.parametrize("shape", SHAPES + [packed(8, 5, 7), packed(8, 6, 6, 6)], ids=str)
@pytest.mark.parametrize("backend", backends("Crop"))
def test_offsets_and_sizes(shape, mode, backend):
    crop(backend, offsets_params(shape, mode), [_x(shape)])


def _array_cases():
    """(shape, start, end, negative axis) of one starts/ends/axes box: the CPU's boxes on every
    axis of SHAPES, and the GPU's on blobs it packs by 4 (in the slow run, with the packed sets)."""
    for shape in SHAPES:
        for axis in range(len(shape)):
            n = shape[axis]
            boxes = [(0, n), (U, U), (0, 0), (-n, 100), (U, -1 if n > 1 else U)]
            if n >= 3:
                boxes += [(1, -1), (-2, U), (1, 2), (-3, -1), (2, 0)]
            for start, end in dict.fromkeys(boxes):
                yield pytest.param(shape, start, end, axis - len(shape), id=f"{shape}-{start}:{end}@{axis}")
    for shape in [(13,), (12, 9), (8, 5, 7), (3, 7, 13), (8, 3, 5, 7)]:
        marks = [pytest.mark.slow] if shape[0] in (8, 12) else []
        for axis in range(len(shape)):
            boxes = [(U, U), (1, -1), (-2, U), (0, 4), (4, 0)] if shape[axis] >= 5 else [(1, U)]
            for start, end in boxes:
                case = (shape, start, end, axis - len(shape))
                yield pytest.param(*case, marks=marks, id=f"gpu-{shape}-{start}:{end}@{axis}")


ARRAY_CASES = list(_array_cases())


# a long sweep: the GPU runs it on SPOT_GRID's two sets (fp32 in the main run)
@pytest.mark.parametrize("shape,start,end,axis", ARRAY_CASES)
@pytest.mark.parametrize("backend", backends("Crop", grid=SPOT_GRID))
def test_arrays_every_axis(shape, start, end, axis, backend):
    crop(backend, {9: [start], 10: [end], 11: [axis]}, [_x(shape)])


@pytest.mark.parametrize("shape,start,end,axis", ARRAY_CASES)
def test_arrays_positive_axis(shape, start, end, axis):
    # the same boxes by positive axis: the CPU layer's helper resolves the axes, and the GPU
    # layer takes its box from that helper, so the CPU alone checks this form
    crop("cpu", {9: [start], 10: [end], 11: [axis + len(shape)]}, [_x(shape)])


SEVERAL_AXES = [
    ((4, 6, 7, 8), {9: [1, 0, 2, -3], 10: [3, U, -1, 100]}),  # no axes: the leading ones
    ((4, 6, 7, 8), {9: [1, 2], 10: [-1, 5], 11: [3, 1]}),
    ((4, 6, 7, 8), {9: [1, 2, 3], 10: [-1, 5, 4], 11: [-1, 0, -3]}),
    ((3, 7, 13), {9: [1, 2, 3], 10: [3, 6, -2]}),
    ((16, 7, 9), {9: [4, 2], 10: [12, 5], 11: [0, 1]}),
]


@pytest.mark.parametrize("shape,params", SEVERAL_AXES, ids=str)
@pytest.mark.parametrize("backend", backends("Crop"))
def test_arrays_without_axes_and_several_axes(shape, params, backend):
    crop(backend, params, [_x(shape)])


def _reference_shape(shape):
    ref_shape = tuple(max(1, n - 2) for n in shape)
    if len(shape) >= 3 and shape[0] == 12:
        ref_shape = (4,) + ref_shape[1:]  # 12 packed channels cut to 4
    return ref_shape


@pytest.mark.parametrize("shape", SHAPES + [(13,), packed(12, 6, 9), packed(8, 4, 5, 6)], ids=str)
@pytest.mark.parametrize("backend", backends("Crop"))
def test_reference_blob(shape, backend):
    ref_shape = _reference_shape(shape)
    crop(backend, reference_offsets(shape, ref_shape), [_x(shape), _x(ref_shape)])


LOWER_RANK = [
    ((3, 7, 13), (5, 9), {0: 2, 1: 1}),
    ((8, 7, 13), (5, 9), {0: 2, 1: 1}),
    ((3, 7, 13), (9,), {0: 2}),
    ((2, 3, 5, 7), (4, 5), {0: 1, 1: 1, 13: 1}),
]


@pytest.mark.parametrize("shape,ref_shape,params", LOWER_RANK, ids=str)
@pytest.mark.parametrize("backend", backends("Crop"))
def test_reference_of_lower_rank_keeps_channels(shape, ref_shape, params, backend):
    crop(backend, params, [_x(shape), _x(ref_shape)])


@pytest.mark.parametrize(
    "params", [{0: 10, 1: 20, 2: 1, 3: 200, 4: 100, 5: U}, {9: [3], 10: [-3], 11: [-1]}], ids=str
)
@pytest.mark.parametrize("backend", backends("Crop"))
def test_big(params, backend):
    crop(backend, params, [_x((3, 227, 227))])


@pytest.mark.parametrize("shape", [(3, 7, 13), packed(8, 7, 13)], ids=str)
@pytest.mark.parametrize("backend", backends("Crop"))
def test_whole_blob_is_shared(shape, backend):
    crop(backend, {3: U, 4: U, 5: U}, [_x(shape)])


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


@pytest.mark.gpu
@pytest.mark.parametrize(
    "params,shape",
    [
        ({9: [10], 10: [U]}, (7,)),
        ({9: [3], 10: [2]}, (8, 7)),
        ({0: 8, 3: U}, (7,)),
        ({2: 9, 5: U}, (8, 3, 3)),
    ],
)
def test_bad_boxes_gpu(params, shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Crop", params, [shape]), make_bin([]), [_x(shape)], use_packing_layout=True
        )
    assert ret != 0 and "Crop" in caplog.text


@pytest.mark.gpu
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
