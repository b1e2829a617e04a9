"""Mat layout, views, numpy interop and the pixel API, checked against the PyPI ncnn oracle.

Note: the oracle's ``Mat(ndarray)`` wraps the array's memory without copying, so every
array handed to it is kept alive in a local for as long as the oracle Mat is used.
"""

from __future__ import annotations

import logging
import pathlib

import ncnn  # the oracle  # noqa: E402
import numpy as np
import pytest
from oracle import assert_mul_add

from ncnn_c.allocator import PoolAllocator
from ncnn_c.mat import Mat, alignSize, float16_to_float32, float32_to_float16

PT = Mat.PixelType
RNG_SEED = 1234


def rng():
    return np.random.default_rng(RNG_SEED)


def fields(m):
    return (m.dims, m.w, m.h, m.d, m.c, m.elemsize, m.elempack)


# ----------------------------------------------------------------------------- layout

SHAPES = [(7,), (5, 3), (5, 3, 2), (5, 3, 2, 4), (1,), (4, 4, 4), (3, 1, 1, 5), (13, 7, 3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("elemsize,elempack", [(4, 1), (2, 1), (1, 1), (16, 4), (8, 4), (32, 8), (8, 8)])
def test_create_layout_matches_oracle(shape, elemsize, elempack):
    ours = Mat(*shape, elemsize=elemsize, elempack=elempack)
    ref = ncnn.Mat(*shape, elemsize=elemsize, elempack=elempack)
    assert fields(ours) == fields(ref)
    assert ours.n == ref.n == 1
    assert ours.elembits() == ref.elembits()
    assert ours.cstep == ref.cstep
    assert ours.total() == ref.total()
    assert ours.raw().nbytes == ours.cstep * ours.c * ours.elemsize
    assert ours.data_ptr() % 64 == 0
    assert not ours.empty()


def test_tuple_shape_and_create_forms():
    assert fields(Mat((5, 3, 2))) == fields(ncnn.Mat((5, 3, 2)))
    assert fields(Mat((7,))) == fields(ncnn.Mat((7,)))
    m = Mat()
    m.create((6, 2, 3, 4), elemsize=2)
    assert (m.dims, m.w, m.h, m.d, m.c, m.elemsize) == (4, 6, 2, 3, 4, 2)
    assert m.cstep == alignSize(6 * 2 * 3 * 2, 16) // 2


def test_empty_mat_matches_oracle():
    ours, ref = Mat(), ncnn.Mat()
    assert fields(ours) == fields(ref)
    assert ours.empty() and ref.empty()
    assert ours.total() == ref.total() == 0
    assert ours.data_ptr() == 0
    assert np.array(ours).size == 0


def test_create_keeps_storage_when_unchanged_and_reallocates_otherwise():
    m = Mat(8, 8, 3)
    p = m.data_ptr()
    m.create(8, 8, 3)
    assert m.data_ptr() == p
    m.create(8, 8, 4)
    assert m.c == 4 and m.raw().nbytes == m.cstep * 4 * 4


def test_create_like_and_release():
    a = Mat(5, 3, 2, elemsize=8, elempack=2)
    b = Mat()
    b.create_like(a)
    assert fields(b) == fields(a) and b.cstep == a.cstep
    b.release()
    assert b.empty() and b.dims == 0 and b.w == 0 and b.cstep == 0 and b.elemsize == 0


def test_zero_sized_mat_is_empty():
    m = Mat(0, 3)
    assert m.dims == 2 and m.empty()


# 2^40 pixels a channel, 4096 channels: 16 PiB, past any machine's address space
HUGE = (1 << 20, 1 << 20, 1 << 12)


def test_allocation_failure_gives_an_empty_mat_as_the_oracle(caplog):
    # ncnn's create keeps the shape and leaves data NULL when fastMalloc fails: an empty Mat,
    # not an exception (issue 28); ncnn_c logs the failed size
    ref = ncnn.Mat(*HUGE)
    assert ref.empty()
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ours = Mat(*HUGE)
        made = Mat()
        made.create(*HUGE)
    for m in (ours, made):
        assert m.empty() and m.data_ptr() == 0
        assert fields(m) == fields(ref) and m.cstep == ref.cstep
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and all("allocation of" in line and "failed" in line for line in lines), lines


@pytest.mark.parametrize(
    "args,kwargs,exc",
    [
        ((-1,), {}, ValueError),
        ((3, -2), {}, ValueError),
        ((1.5,), {}, TypeError),
        ((1, 2, 3, 4, 5), {}, TypeError),
        ((3,), {"elemsize": 0}, ValueError),
        ((3,), {"elempack": 0}, ValueError),
        ((True,), {}, TypeError),
    ],
)
def test_bad_constructor_arguments_raise(args, kwargs, exc):
    with pytest.raises(exc):
        Mat(*args, **kwargs)


def test_bad_array_inputs_raise():
    with pytest.raises(TypeError):
        Mat(np.zeros((2, 2), dtype=np.complex64))
    with pytest.raises(ValueError):
        Mat(np.zeros((2, 2, 2, 2, 2), dtype=np.float32))
    with pytest.raises(ValueError):
        Mat(np.float32(3.0))
    with pytest.raises(ValueError):
        Mat(3).create(3, n=0)


# ----------------------------------------------------------------------------- numpy interop


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 5), (3, 2, 3, 5), (1, 1, 1), (4, 227, 227)])
def test_ndarray_round_trip_matches_oracle(shape):
    src = rng().standard_normal(shape).astype(np.float32)
    keep = src.copy()
    ref = ncnn.Mat(keep)
    ours = Mat(src)
    assert fields(ours) == fields(ref)
    one_channel = len(shape) <= 2 or shape[0] == 1
    if one_channel or shape[-1] * shape[-2] * 4 % 16 == 0:
        # wrapped: unpadded (ncnn's cstep = w*h*d for one channel, 16-byte channels otherwise)
        assert np.shares_memory(ours.raw(), src) and ours.refcount is None
        assert ours.cstep == (int(np.prod(shape[-2:])) if one_channel else ref.cstep)
    else:
        # several channels needing padding: a copy into a freshly created (padded) Mat
        assert not np.shares_memory(ours.raw(), src) and ours.refcount == 1
        assert ours.cstep == ncnn.Mat(*reversed(shape)).cstep
    np.testing.assert_array_equal(np.array(ours), np.array(ref))
    np.testing.assert_array_equal(ours.numpy(), src)
    assert np.array(ours).shape == shape


@pytest.mark.parametrize(
    "dtype,elemsize,out",
    [(np.float32, 4, np.float32), (np.float16, 2, np.float16), (np.int8, 1, np.int8), (np.uint8, 1, np.int8)],
)
def test_ndarray_dtypes_match_oracle(dtype, elemsize, out):
    src = (np.arange(12) % 100).reshape(3, 4).astype(dtype)
    keep = src.copy()
    ref = ncnn.Mat(keep)
    ours = Mat(src)
    assert ours.elemsize == ref.elemsize == elemsize
    assert np.array(ours).dtype == np.array(ref).dtype == out
    np.testing.assert_array_equal(np.array(ours), np.array(ref))


def test_float64_array_becomes_float32():
    m = Mat(np.linspace(0, 1, 10))
    assert m.elemsize == 4 and np.array(m).dtype == np.float32
    np.testing.assert_allclose(np.array(m), np.linspace(0, 1, 10), rtol=1e-7)


def test_mat_from_array_copies_padded_channels_and_numpy_is_a_view():
    src = np.zeros((2, 3, 5), np.float32)  # 15-float channels: ncnn_c pads them to 16
    m = Mat(src)
    src[0, 0, 0] = 5
    assert np.array(m)[0, 0, 0] == 0  # contract: such an array is copied
    v = m.numpy()
    v[1, 2, 4] = 7
    assert m.tensor()[1, 2, 4] == 7
    assert m.channel(1).tensor()[2, 4] == 7


def test_array_protocol_copy_and_dtype_keywords():
    m = Mat(np.arange(6, dtype=np.float32).reshape(2, 3))
    shared = np.array(m, copy=False)
    shared[0, 0] = 42
    assert m.tensor()[0, 0] == 42
    copied = np.array(m)
    copied[0, 1] = -1
    assert m.tensor()[0, 1] == 1
    d = np.asarray(m, dtype=np.float64)
    assert d.dtype == np.float64 and d[1, 2] == 5
    with pytest.raises(ValueError):
        np.array(m, dtype=np.float64, copy=False)


def test_numpy_formats():
    m = Mat(np.array([1, -2, 3], dtype=np.int32).view(np.float32))
    np.testing.assert_array_equal(m.numpy("i"), [1, -2, 3])
    assert m.numpy("f").dtype == np.float32
    with pytest.raises(ValueError):
        m.numpy("q")


def test_tensor_with_elempack_and_padding():
    m = Mat(5, 3, 2, elemsize=16, elempack=4)
    t = m.tensor()
    assert t.shape == (2, 3, 5, 4) and t.dtype == np.float32
    assert m.cstep == 15  # 5*3*16 bytes is 16-aligned already
    m2 = Mat(3, 3, 2)  # 36 bytes per channel -> padded to 48
    assert m2.cstep == 12
    t2 = m2.tensor()
    t2[...] = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    flat = m2.raw().view(np.float32)
    np.testing.assert_array_equal(flat[12:21], np.arange(9, 18))
    m3 = Mat(4, 2, elemsize=2, elempack=1)
    assert m3.tensor().dtype == np.float16 and m3.tensor().shape == (2, 4)


def test_from_tensor_with_elempack():
    arr = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    m = Mat.from_tensor(arr, elempack=4)
    assert (m.dims, m.w, m.h, m.c, m.elemsize, m.elempack) == (3, 4, 3, 2, 16, 4)
    np.testing.assert_array_equal(m.tensor(), arr)
    with pytest.raises(ValueError):
        Mat.from_tensor(arr, elempack=8)
    plain = Mat.from_tensor(arr[0])
    assert plain.dims == 3 and plain.elempack == 1


def test_getitem_setitem_len_match_oracle():
    src = np.arange(10, dtype=np.float32)
    keep = src.copy()
    ours, ref = Mat(src), ncnn.Mat(keep)
    assert len(ours) == len(ref) == 10
    assert ours[3] == ref[3] == 3.0
    ours[4] = 9.5
    assert np.array(ours)[4] == 9.5
    # ours wraps the 40 bytes of the array: indexes reach its end, not a padding it lacks
    assert ours.total() == 10 and ncnn.Mat(10).total() == 12
    assert ours[-1] == ours[9] == 9.0
    with pytest.raises(IndexError):
        ours[10]
    # a Mat of its own reaches cstep * c (padding included), as ncnn's operator[]
    m = Mat(10)
    m[11] = 1.0
    with pytest.raises(IndexError):
        m[12]


def test_repr_and_shape():
    m = Mat(5, 3, 2, elemsize=16, elempack=4)
    r = repr(m)
    assert "w=5" in r and "c=2" in r and "elempack=4" in r
    s = m.shape()
    assert (s.dims, s.w, s.h, s.c) == (3, 5, 3, 8) and s.empty()


# ----------------------------------------------------------------------------- sharing and views


def test_share_from_and_copy_constructor_share_memory():
    a = Mat(np.ones((2, 3, 4), np.float32))
    b = Mat()
    b.share_from(a)
    c = Mat(a)
    assert b.data_ptr() == c.data_ptr() == a.data_ptr()
    b.tensor()[0, 0, 0] = 3
    assert a.tensor()[0, 0, 0] == 3 and c.tensor()[0, 0, 0] == 3
    b.release()
    assert not a.empty()


def test_clone_and_clone_from_are_independent():
    a = Mat(np.arange(30, dtype=np.float32).reshape(2, 3, 5))
    b = a.clone()
    assert b.data_ptr() != a.data_ptr() and b.cstep == a.cstep
    np.testing.assert_array_equal(np.array(b), np.array(a))
    b.tensor()[...] = 0
    assert np.array(a).sum() == sum(range(30))
    c = Mat()
    c.clone_from(a.channel_range(1, 1))
    np.testing.assert_array_equal(np.array(c)[0], np.array(a)[1])
    assert Mat().clone().empty()


@pytest.mark.parametrize("shape", [(4, 3, 2), (5, 3, 2), (3, 2, 2, 3)])
def test_channel_views_match_oracle(shape):
    src = rng().standard_normal(tuple(reversed(shape))).astype(np.float32)
    keep = src.copy()
    ref = ncnn.Mat(keep)
    ours = Mat(src)
    for q in range(ours.c):
        oc, rc = ours.channel(q), ref.channel(q)
        assert (oc.dims, oc.w, oc.h, oc.d, oc.c) == (rc.dims, rc.w, rc.h, rc.d, rc.c)
        assert oc.cstep == rc.cstep
        np.testing.assert_array_equal(np.array(oc), np.array(rc))
        assert oc.data_ptr() == ours.data_ptr() + q * ours.cstep * 4
    with pytest.raises(IndexError):
        ours.channel(ours.c)


def test_channel_range_row_range_range_depth():
    src = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    keep = src.copy()
    ref = ncnn.Mat(keep)
    m = Mat(src)
    cr, rcr = m.channel_range(1, 2), ref.channel_range(1, 2)
    assert (cr.dims, cr.c, cr.cstep) == (rcr.dims, rcr.c, rcr.cstep)
    np.testing.assert_array_equal(np.array(cr), np.array(rcr))
    c0 = m.channel(0)
    rr = c0.row_range(1, 2)
    np.testing.assert_array_equal(np.array(rr), np.array(ref.channel(0).row_range(1, 2)))
    np.testing.assert_array_equal(c0.row(2), src[0, 2])
    rg = c0.range(3, 6)
    np.testing.assert_array_equal(np.array(rg), np.array(ref.channel(0).range(3, 6)))
    rg.tensor()[0] = -1  # views write through
    assert m.tensor()[0, 0, 3] == -1
    vol = np.arange(2 * 3 * 2 * 4, dtype=np.float32).reshape(2, 3, 2, 4)
    keep_vol = vol.copy()
    m4, r4 = Mat(vol), ncnn.Mat(keep_vol)
    np.testing.assert_array_equal(np.array(m4.channel(1).depth(2)), np.array(r4.channel(1).depth(2)))
    np.testing.assert_array_equal(np.array(m4.channel(1).depth_range(1, 2)), vol[1, 1:3])
    with pytest.raises(IndexError):
        m.channel_range(2, 2)


def test_view_keeps_storage_alive():
    m = Mat(np.full((2, 2, 2), 3, np.float32))
    v = m.channel(1)
    del m
    np.testing.assert_array_equal(np.array(v), np.full((2, 2), 3))


# ----------------------------------------------------------------------------- reshape / fill


@pytest.mark.parametrize(
    "src_shape,new_shape",
    [
        ((2, 3, 4), (12, 2)),
        ((2, 3, 4), (24,)),
        ((2, 3, 4), (6, 2, 2)),
        ((2, 3, 5), (30,)),  # padded channels -> copy
        ((2, 3, 5), (5, 6)),
        ((30,), (5, 3, 2)),  # needs padding -> copy
        ((30,), (5, 3, 1, 2)),
        ((24,), (2, 3, 2, 2)),
    ],
)
def test_reshape_matches_oracle(src_shape, new_shape):
    src = np.arange(int(np.prod(src_shape)), dtype=np.float32).reshape(src_shape)
    keep = src.copy()
    ours = Mat(src).reshape(*new_shape)
    ref = ncnn.Mat(keep).reshape(*new_shape)
    assert fields(ours) == fields(ref)
    if len(new_shape) >= 3:
        assert ours.cstep == ref.cstep
    np.testing.assert_array_equal(np.array(ours), np.array(ref))
    np.testing.assert_array_equal(np.array(ours).ravel(), src.ravel())


def test_reshape_shares_when_dense_and_rejects_bad_total(caplog):
    m = Mat(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    r = m.reshape(24)
    assert r.data_ptr() == m.data_ptr()
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        bad = m.reshape(25)
    assert bad.empty() and "reshape" in caplog.text


def test_fill_including_padding_and_int8():
    m = Mat(3, 3, 2)
    m.fill(2.5)
    assert np.all(m.raw().view(np.float32) == 2.5)
    ref = ncnn.Mat(3, 3, 2)
    ref.fill(2.5)
    np.testing.assert_array_equal(np.array(m), np.array(ref))
    q = Mat(4, 2, elemsize=1)
    q.fill(-3)
    assert np.all(q.tensor() == -3) and q.tensor().dtype == np.int8


# ----------------------------------------------------------------------------- external memory / helpers


def test_from_external_reads_and_writes_foreign_memory():
    backing = np.zeros(2 * 16, np.float32)  # 3x5 per channel -> cstep 16
    m = Mat.from_external(backing.ctypes.data, 5, 3, 2, elemsize=4, owner=backing)
    assert m.cstep == 16 and m.data_ptr() == backing.ctypes.data
    m.tensor()[1, 2, 4] = 9
    assert backing[16 + 14] == 9
    with pytest.raises(ValueError):
        Mat.from_external(0, 4, elemsize=4)


def test_helpers():
    assert alignSize(13, 16) == 16 and alignSize(32, 16) == 32 and alignSize(0, 4) == 0
    a = np.array([1.0, 0.5, -2.25, 65504.0], np.float32)
    h = float32_to_float16(a)
    assert h.dtype == np.float16
    np.testing.assert_array_equal(float16_to_float32(h), a)
    ref = np.array(ncnn.cast_float16_to_float32(ncnn.cast_float32_to_float16(ncnn.Mat(a.copy()))))
    np.testing.assert_array_equal(float16_to_float32(h), ref)


def test_mat_with_pool_allocator_returns_block():
    pool = PoolAllocator()
    m = Mat(16, 16, 3, allocator=pool)
    assert m.allocator is pool and len(pool.payouts) == 1
    ptr = m.data_ptr()
    assert ptr % 64 == 0
    c = m.clone(allocator=pool)
    assert len(pool.payouts) == 2
    del m, c
    assert len(pool.payouts) == 0 and len(pool.budgets) == 2
    again = Mat(16, 16, 3, allocator=pool)
    assert again.data_ptr() in (ptr, pool.payouts[0][1].ctypes.data)
    assert len(pool.budgets) == 1


# ----------------------------------------------------------------------------- pixels

CHANNELS = {1: 3, 2: 3, 3: 1, 4: 4, 5: 4}
ALL_TYPES = sorted(
    (k, int(v))
    for k, v in ncnn.Mat.PixelType.__members__.items()
    if k.startswith("PIXEL_") and "MASK" not in k and "SHIFT" not in k
)


def test_pixel_type_constants_mirror_oracle():
    for name, value in ncnn.Mat.PixelType.__members__.items():
        assert getattr(PT, name) == int(value), name


@pytest.mark.parametrize("name,ptype", ALL_TYPES)
def test_from_pixels_every_type_matches_oracle(name, ptype):
    w, h = 7, 5
    img = rng().integers(0, 256, (h, w, CHANNELS[ptype & 0xFFFF]), dtype=np.uint8)
    ours = Mat.from_pixels(img, ptype, w, h)
    ref = ncnn.Mat.from_pixels(img, ptype, w, h)
    assert fields(ours) == fields(ref)
    np.testing.assert_array_equal(np.array(ours), np.array(ref))


RESIZE_CASES = [
    (name, ptype, size)
    for name, ptype in ALL_TYPES
    for size in [(31, 17, 9, 6), (5, 4, 13, 11), (3, 3, 3, 3), (2, 9, 1, 4), (1, 1, 3, 2)]
] + [
    (name, ptype, (640, 480, 227, 227))
    for name, ptype in ALL_TYPES
    if name in ("PIXEL_RGB", "PIXEL_BGR2RGB", "PIXEL_RGBA2GRAY")
]


@pytest.mark.parametrize("name,ptype,size", RESIZE_CASES)
def test_from_pixels_resize_every_type_matches_oracle(name, ptype, size):
    w, h, tw, th = size
    img = rng().integers(0, 256, (h, w, CHANNELS[ptype & 0xFFFF]), dtype=np.uint8)
    ours = Mat.from_pixels_resize(img, ptype, w, h, tw, th)
    ref = ncnn.Mat.from_pixels_resize(img, ptype, w, h, tw, th)
    assert fields(ours) == fields(ref)
    np.testing.assert_array_equal(np.array(ours), np.array(ref))


def test_from_pixels_stride_bytes_and_roi_match_oracle():
    w, h, stride = 7, 9, 40
    buf = rng().integers(0, 256, h * stride, dtype=np.uint8)
    for t in (PT.PIXEL_RGBA2BGR, PT.PIXEL_RGB, PT.PIXEL_GRAY2RGB, PT.PIXEL_BGR2GRAY):
        np.testing.assert_array_equal(
            np.array(Mat.from_pixels(buf.tobytes(), t, w, h, stride)),
            np.array(ncnn.Mat.from_pixels(buf, t, w, h, stride)),
        )
        np.testing.assert_array_equal(
            np.array(Mat.from_pixels_roi(buf, t, w, h, stride, 1, 2, 5, 6)),
            np.array(ncnn.Mat.from_pixels_roi(buf, t, w, h, stride, 1, 2, 5, 6)),
        )
        np.testing.assert_array_equal(
            np.array(Mat.from_pixels_roi_resize(buf, t, w, h, stride, 1, 2, 5, 6, 11, 3)),
            np.array(ncnn.Mat.from_pixels_roi_resize(buf, t, w, h, stride, 1, 2, 5, 6, 11, 3)),
        )
        np.testing.assert_array_equal(
            np.array(Mat.from_pixels_resize(buf, t, w, h, stride, 4, 13)),
            np.array(ncnn.Mat.from_pixels_resize(buf, t, w, h, stride, 4, 13)),
        )
    img = rng().integers(0, 256, (6, 8, 3), dtype=np.uint8)
    np.testing.assert_array_equal(
        np.array(Mat.from_pixels_roi(img, PT.PIXEL_BGR, 8, 6, 2, 1, 3, 4)),
        np.array(ncnn.Mat.from_pixels_roi(img, PT.PIXEL_BGR, 8, 6, 2, 1, 3, 4)),
    )
    np.testing.assert_array_equal(
        np.array(Mat.from_pixels_roi_resize(img, PT.PIXEL_BGR, 8, 6, 2, 1, 3, 4, 7, 7)),
        np.array(ncnn.Mat.from_pixels_roi_resize(img, PT.PIXEL_BGR, 8, 6, 2, 1, 3, 4, 7, 7)),
    )


def test_from_pixels_accepts_oracle_enum_and_keywords():
    img = rng().integers(0, 256, (4, 6, 3), dtype=np.uint8)
    a = Mat.from_pixels(img, ncnn.Mat.PixelType.PIXEL_BGR2RGB, 6, 4)
    b = Mat.from_pixels_resize(img, PT.PIXEL_BGR2RGB, 6, 4, target_width=3, target_height=2)
    assert a.c == 3 and (b.w, b.h) == (3, 2)


def test_from_pixels_roi_out_of_image_is_empty_and_logged(caplog):
    img = np.zeros((5, 5, 3), np.uint8)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        m = Mat.from_pixels_roi(img, PT.PIXEL_RGB, 5, 5, 3, 0, 3, 3)
    assert m.empty() and "roi" in caplog.text
    assert ncnn.Mat.from_pixels_roi(img, PT.PIXEL_RGB, 5, 5, 3, 0, 3, 3).empty()


def test_from_pixels_bad_arguments_raise():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ValueError):
        Mat.from_pixels(img, PT.PIXEL_RGB, 5, 4)  # buffer too small
    with pytest.raises(ValueError):
        Mat.from_pixels(img, 99, 4, 4)
    with pytest.raises(ValueError):
        Mat.from_pixels(img, PT.PIXEL_RGB | (9 << 16), 4, 4)
    with pytest.raises(ValueError):
        Mat.from_pixels(img, PT.PIXEL_RGB, 0, 4)
    with pytest.raises(ValueError):
        Mat.from_pixels(img, PT.PIXEL_RGB, 4, 4, 5)  # stride < row
    with pytest.raises(TypeError):
        Mat.from_pixels(img.astype(np.float32), PT.PIXEL_RGB, 4, 4)
    with pytest.raises(TypeError):
        Mat.from_pixels(img, 1.0, 4, 4)
    with pytest.raises(ValueError):
        Mat.from_pixels_resize(img, PT.PIXEL_RGB, 4, 4, 0, 3)


def test_real_image_preprocessing_matches_oracle():
    from PIL import Image as from_png

    path = pathlib.Path(__file__).resolve().parents[1] / "models" / "256-ncnn.png"
    img = np.asarray(from_png.open(path).convert("RGB"))
    h, w, _ = img.shape
    mean, norm = [104.0, 117.0, 123.0], [0.017, 0.017, 0.017]
    ours = Mat.from_pixels_resize(img, PT.PIXEL_RGB2BGR, w, h, 227, 227)
    ref = ncnn.Mat.from_pixels_resize(img, PT.PIXEL_RGB2BGR, w, h, 227, 227)
    x = np.array(ours, copy=True)
    np.testing.assert_array_equal(x, np.array(ref))
    ours.substract_mean_normalize(mean, norm)
    ref.substract_mean_normalize(mean, norm)
    _check_mean_norm(np.array(ours), np.array(ref), x, mean, norm)


def _check_mean_norm(got, ref, x, mean, norm) -> None:
    """x*norm + (-mean*norm): ncnn_c rounds once, the oracle once (FMA) or twice, by CPU."""
    n = np.asarray(norm, np.float32).reshape(-1, 1, 1)
    bias = -(np.asarray(mean, np.float32).reshape(-1, 1, 1) * n)
    assert_mul_add(got, ref, x, n, bias, "substract_mean_normalize")


@pytest.mark.parametrize("base", ["PIXEL_RGB", "PIXEL_BGR", "PIXEL_GRAY", "PIXEL_RGBA", "PIXEL_BGRA"])
def test_to_pixels_round_trip(base):
    t = getattr(PT, base)
    ch = CHANNELS[t]
    img = rng().integers(0, 256, (5, 7, ch), dtype=np.uint8)
    m = Mat.from_pixels(img, t, 7, 5)
    np.testing.assert_array_equal(m.to_pixels(t), img)
    out = np.zeros(5 * 32, np.uint8)  # ncnn's buffer form with a stride
    m.to_pixels(out, t, 32)
    np.testing.assert_array_equal(out.reshape(5, 32)[:, : 7 * ch].reshape(5, 7, ch), img)


def test_to_pixels_conversions_and_saturation():
    img = rng().integers(0, 256, (4, 6, 3), dtype=np.uint8)
    m = Mat.from_pixels(img, PT.PIXEL_RGB, 6, 4)
    np.testing.assert_array_equal(m.to_pixels(PT.PIXEL_RGB2BGR), img[..., ::-1])
    rgba = m.to_pixels(PT.PIXEL_RGB2RGBA)
    np.testing.assert_array_equal(rgba[..., :3], img)
    assert np.all(rgba[..., 3] == 255)
    bgra = m.to_pixels(PT.PIXEL_RGB2BGRA)
    np.testing.assert_array_equal(bgra[..., :3], img[..., ::-1])
    gray = m.to_pixels(PT.PIXEL_RGB2GRAY)[..., 0]
    np.testing.assert_array_equal(gray, np.array(ncnn.Mat.from_pixels(img, PT.PIXEL_RGB2GRAY, 6, 4))[0])
    f = Mat(np.array([[[-3.0, 0.4, 1.7, 254.9, 300.0]]], np.float32))
    np.testing.assert_array_equal(f.to_pixels(PT.PIXEL_GRAY)[0, :, 0], [0, 0, 1, 254, 255])


@pytest.mark.parametrize("tw,th", [(3, 2), (11, 9), (7, 5)])
def test_to_pixels_resize_matches_oracle_resize(tw, th):
    img = rng().integers(0, 256, (5, 7, 3), dtype=np.uint8)
    m = Mat.from_pixels(img, PT.PIXEL_RGB, 7, 5)
    got = m.to_pixels_resize(PT.PIXEL_RGB, tw, th)
    ref = np.array(ncnn.Mat.from_pixels_resize(img, PT.PIXEL_RGB, 7, 5, tw, th)).transpose(1, 2, 0)
    np.testing.assert_array_equal(got, ref.astype(np.uint8))
    out = np.zeros(th * (tw * 3 + 4), np.uint8)
    m.to_pixels_resize(out, PT.PIXEL_RGB, tw, th, tw * 3 + 4)
    np.testing.assert_array_equal(out.reshape(th, -1)[:, : tw * 3].reshape(th, tw, 3), got)


@pytest.mark.parametrize(
    "mean,norm",
    [
        ([1.5, 2.25, 100.7], [0.017, 0.3, 1 / 255.0]),
        ([10.0, 20.0, 30.0], []),
        ([], [0.5, 2.0, 1 / 3.0]),
        (None, None),
        ([], []),
    ],
)
def test_substract_mean_normalize_matches_oracle(mean, norm):
    src = rng().uniform(0, 255, (3, 60, 70)).astype(np.float32)
    x = src.copy()  # both Mats below wrap their arrays and normalise them in place
    keep = src.copy()
    ref = ncnn.Mat(keep)
    ref.substract_mean_normalize(mean or [], norm or [])
    ours = Mat(src)
    ours.substract_mean_normalize(mean, norm)
    if mean and norm:
        _check_mean_norm(np.array(ours), np.array(ref), x, mean, norm)
    else:
        np.testing.assert_array_equal(np.array(ours), np.array(ref))


def test_substract_mean_normalize_rejects_short_lists():
    m = Mat(np.zeros((3, 2, 2), np.float32))
    with pytest.raises(ValueError):
        m.substract_mean_normalize([1.0, 2.0], [])


def test_copy_deepcopy_and_pickle():
    import copy
    import pickle

    m = Mat(np.arange(2 * 3 * 4 * 4, dtype=np.float16).reshape(2, 3, 4, 4), allocator=None)
    packed = Mat.from_tensor(np.asarray(m), elempack=4)
    assert copy.copy(packed).data_ptr() == packed.data_ptr()
    d = copy.deepcopy(packed)
    assert d.data_ptr() != packed.data_ptr()
    np.testing.assert_array_equal(d.tensor(), packed.tensor())
    p = pickle.loads(pickle.dumps(packed))
    assert fields(p) == fields(packed) and p.tensor().dtype == np.float16
    np.testing.assert_array_equal(p.tensor(), packed.tensor())
    assert pickle.loads(pickle.dumps(Mat())).empty()


def test_from_pixels_accepts_pil_image():
    from PIL import Image as image

    img = rng().integers(0, 256, (6, 5, 3), dtype=np.uint8)
    pil = image.fromarray(img)
    np.testing.assert_array_equal(
        np.array(Mat.from_pixels(pil, PT.PIXEL_RGB, 5, 6)), np.array(Mat.from_pixels(img, PT.PIXEL_RGB, 5, 6))
    )
