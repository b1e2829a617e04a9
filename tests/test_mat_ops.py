"""ncnn_c.copy_make_border / _3d, copy_cut_border / _3d, convert_packing, flatten against PyPI ncnn."""

from __future__ import annotations

import logging

import ncnn
import numpy as np
import pytest

import ncnn_c
from ncnn_c.mat import Mat

RNG = np.random.default_rng(7)

SHAPES = [(7,), (1,), (13, 7), (3, 13, 7), (1, 1, 1), (2, 5, 4, 3), (4, 2, 3, 5)]


def _arr(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _ours(a):
    return Mat.from_tensor(a)


def _same(ours, theirs):
    assert (ours.dims, ours.w, ours.h, ours.d, ours.c) == (
        theirs.dims,
        theirs.w,
        theirs.h,
        theirs.d,
        theirs.c,
    )
    if theirs.dims:
        np.testing.assert_array_equal(np.asarray(ours.tensor()), np.array(theirs))


BORDERS = [(0, 0, 0, 0), (1, 2, 3, 4), (0, 3, 2, 0), (2, 0, 0, 1)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("btype", [0, 1, 2])
def test_copy_make_border(shape, border, btype):
    a = _arr(shape)
    if btype == 2 and any(b >= min(shape[-2:]) for b in border):
        # ncnn reads outside the Mat when a reflect border is as wide as the data
        return
    top, bottom, left, right = border
    want = ncnn.copy_make_border(ncnn.Mat(a), top, bottom, left, right, btype, 1.5)
    got = ncnn_c.copy_make_border(_ours(a), top, bottom, left, right, btype, 1.5)
    _same(got, want)
    dst = Mat()
    assert (
        ncnn_c.copy_make_border(_ours(a), dst, top, bottom, left, right, btype, 1.5, ncnn_c.Option()) is None
    )
    _same(dst, want)


@pytest.mark.parametrize("shape", [(2, 5, 4, 3), (3, 4, 6, 5), (2, 1, 3, 2)])
@pytest.mark.parametrize("fb", [(0, 0), (1, 2), (2, 0)])
@pytest.mark.parametrize("btype", [0, 1, 2])
def test_copy_make_border_3d(shape, fb, btype):
    a = _arr(shape)
    front, behind = fb
    if btype == 2 and max(fb) >= shape[1]:
        return
    want = ncnn.copy_make_border_3d(ncnn.Mat(a), 1, 0, 0, 1, front, behind, btype, -2.0)
    got = ncnn_c.copy_make_border_3d(_ours(a), 1, 0, 0, 1, front, behind, btype, -2.0)
    _same(got, want)


@pytest.mark.parametrize("shape", SHAPES + [(227, 227)])
@pytest.mark.parametrize("cut", [(0, 0, 0, 0), (0, 0, 1, 2), (1, 0, 0, 3), (2, 3, 1, 1)])
def test_copy_cut_border(shape, cut):
    a = _arr(shape)
    top, bottom, left, right = cut
    if (
        left + right >= shape[-1]
        or (len(shape) > 1 and top + bottom >= shape[-2])
        or (len(shape) == 1 and top + bottom > 1)
    ):
        return
    got = ncnn_c.copy_cut_border(_ours(a), top, bottom, left, right)
    h0 = shape[-2] if len(shape) > 1 else 1
    sliced = (
        a[..., top : h0 - bottom, left : shape[-1] - right] if len(shape) > 1 else a[left : shape[0] - right]
    )
    np.testing.assert_array_equal(got.tensor(), sliced)
    if len(shape) <= 2:
        # PyPI ncnn is wrong on 3-D (channels after the first shifted by one element) and 4-D
        # (d=0) input, so it is the reference for 1-D and 2-D only
        _same(got, ncnn.copy_cut_border(ncnn.Mat(a), top, bottom, left, right))


def test_copy_cut_border_3d():
    # the PyPI package lacks copy_cut_border_3d: check against plain slicing
    a = _arr((3, 6, 5, 7))
    got = ncnn_c.copy_cut_border_3d(_ours(a), 1, 2, 3, 1, 2, 1)
    np.testing.assert_array_equal(got.tensor(), a[:, 2:5, 1:3, 3:6])
    assert (got.dims, got.w, got.h, got.d, got.c) == (4, 3, 2, 3, 3)
    # make then cut gives the original back
    big = ncnn_c.copy_make_border_3d(_ours(a), 1, 2, 3, 1, 2, 1, 0, 9.0)
    back = ncnn_c.copy_cut_border_3d(big, 1, 2, 3, 1, 2, 1)
    np.testing.assert_array_equal(back.tensor(), a)


def test_bad_borders_log_and_give_empty(caplog):
    a = _ours(_arr((3, 4, 5)))
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert ncnn_c.copy_cut_border(a, 0, 0, 3, 3).empty()
        assert ncnn_c.copy_make_border(a, 1, 1, 1, 1, 7, 0.0).empty()
        assert ncnn_c.copy_cut_border_3d(_ours(_arr((2, 3, 4, 5))), 0, 0, 0, 0, 2, 1).empty()
        assert ncnn_c.copy_make_border(Mat(), 1, 1, 1, 1, 0, 0.0).empty()
        # ncnn crops some sides for negative borders and not others; we refuse them
        assert ncnn_c.copy_make_border(a, -1, 0, 0, 0, 0, 0.0).empty()
    assert len(caplog.records) == 5
    want = ncnn.copy_cut_border(ncnn.Mat(_arr((3, 4, 5))), 0, 0, 3, 3)
    assert want.dims == 0


@pytest.mark.parametrize("shape", [(8,), (16, 3), (8, 2, 3), (4, 3, 2, 5), (12, 1, 1), (6, 2, 3), (5,)])
@pytest.mark.parametrize("pack", [4, 8])
def test_convert_packing_roundtrip_matches_ncnn(shape, pack):
    a = _arr(shape)
    theirs = ncnn.convert_packing(ncnn.Mat(a), pack)
    ours = ncnn_c.convert_packing(_ours(a), pack)
    assert (ours.dims, ours.w, ours.h, ours.d, ours.c, ours.elempack, ours.elemsize) == (
        theirs.dims,
        theirs.w,
        theirs.h,
        theirs.d,
        theirs.c,
        theirs.elempack,
        theirs.elemsize,
    )
    # the PyPI Mat cannot hand packed data to numpy (it crashes): compare the lanes by hand
    if ours.elempack > 1:
        lanes = np.moveaxis(ours.tensor(), -1, 1)
        np.testing.assert_array_equal(lanes.reshape(a.shape), a)
    back_theirs = ncnn.convert_packing(theirs, 1)
    back = ncnn_c.convert_packing(ours, 1)
    _same(back, back_theirs)
    dst = Mat()
    assert ncnn_c.convert_packing(_ours(a), dst, pack, ncnn_c.Option()) is None
    assert dst.elempack == ours.elempack


@pytest.mark.parametrize("shape", SHAPES + [(1, 1), (3, 227, 227)])
def test_flatten(shape):
    a = _arr(shape)
    opt = ncnn.Option()
    opt.use_packing_layout = False  # else x86 ncnn hands back elempack 8 when it divides
    want = ncnn.flatten(ncnn.Mat(a), opt)
    got = ncnn_c.flatten(_ours(a))
    _same(got, want)
    dst = Mat()
    assert ncnn_c.flatten(_ours(a), dst) is None
    _same(dst, want)


def test_flatten_packed_unpacks():
    # ncnn's x86 flatten may re-pack its output (elempack 8 with AVX); ours always gives elempack 1
    a = _arr((8, 2, 3))
    got = ncnn_c.flatten(ncnn_c.convert_packing(_ours(a), 4))
    assert (got.dims, got.w, got.elempack) == (1, 48, 1)
    np.testing.assert_array_equal(got.tensor(), a.reshape(-1))
