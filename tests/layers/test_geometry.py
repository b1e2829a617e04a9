"""The sliding-window geometry every Convolution / Pooling layer, CPU and GPU, takes from
ncnn_c/layer/_geometry.py: SAME pads, explicit pads, output shapes, over 1, 2 and 3 axes.
The layer tests check it against the oracle; these pin the rules themselves (3-D has no layer
yet)."""

from __future__ import annotations

import logging

import pytest

from ncnn_c.layer import _geometry as g
from ncnn_c.layer.convolution import Convolution
from ncnn_c.layer.convolution1d import Convolution1D
from ncnn_c.layer.pooling import Pooling

UPPER, LOWER = g.PAD_SAME_UPPER, g.PAD_SAME_LOWER


@pytest.mark.parametrize(
    "size,extent,stride,upper,want",
    [
        (7, 3, 1, True, (1, 1)),
        (8, 4, 1, True, (1, 2)),
        (8, 4, 1, False, (2, 1)),
        (8, 3, 2, True, (0, 1)),
        (8, 3, 2, False, (1, 0)),
        # a kernel smaller than the stride: a negative total, split by C's truncating division
        (8, 1, 4, True, (-1, -2)),
        (8, 1, 4, False, (-2, -1)),
    ],
)
def test_same_pads(size, extent, stride, upper, want):
    assert g.same_pads(size, extent, stride, upper) == want


def test_resolve_pads_explicit_same_and_none():
    # one positive explicit pad: the params as they are (a negative one crops)
    assert g.resolve_pads((5, 5), (3, 3), (1, 1), (0, 2, -1, 1)) == (0, 2, -1, 1)
    assert g.resolve_pads((5, 5), (3, 3), (1, 1), (UPPER,) * 4) == (1, 1, 1, 1)
    assert g.resolve_pads((6, 6), (4, 4), (1, 1), (LOWER,) * 4) == (2, 1, 2, 1)
    # SAME only when every pad says so; anything else without a positive pad is no padding
    assert g.resolve_pads((5, 5), (3, 3), (1, 1), (UPPER, UPPER, LOWER, LOWER)) == (0, 0, 0, 0)
    assert g.resolve_pads((5, 5), (3, 3), (1, 1), (-1, 0, 0, 0)) == (0, 0, 0, 0)


def test_same_padding_pads_only_when_some_total_is_positive():
    assert g.same_padding((8, 8), (1, 1), (4, 4), True) == (0, 0, 0, 0)
    # columns gain, rows lose: the negative top moves to the bottom (ncnn's border copy drops
    # rows at the bottom), negative columns stay where they are
    assert g.same_padding((8, 8), (1, 3), (4, 1), True) == (0, -3, 1, 1)
    assert g.same_padding((8, 8), (3, 1), (1, 4), False) == (1, 1, -2, -1)


@pytest.mark.parametrize(
    "sizes,extents,strides,pads,want",
    [
        ((10,), (3,), (2,), (1, 1), (5,)),
        ((7, 9), (3, 5), (1, 2), (0, 0, 2, 2), (5, 5)),
        ((4, 7, 9), (3, 3, 5), (1, 1, 2), (1, 1, 0, 0, 2, 2), (4, 5, 5)),
        ((2, 2), (3, 3), (1, 1), (0, 0, 0, 0), (0, 0)),
    ],
)
def test_output_shape(sizes, extents, strides, pads, want):
    assert g.output_shape(sizes, extents, strides, pads) == want


def test_transposed_shape():
    # (n - 1) * stride + extent + output_pad
    assert g.transposed_shape((3, 4), (3, 5), (2, 1), (1, 0)) == (8, 8)


def _layer(cls, **params):
    layer = cls()
    for k, v in params.items():
        setattr(layer, k, v)
    return layer


def test_window_reads_the_layer_params_per_axis():
    conv = _layer(Convolution, kernel_w=3, kernel_h=5, dilation_w=2, stride_w=2)
    conv.pad_left = conv.pad_right = conv.pad_top = conv.pad_bottom = UPPER
    assert conv.extents() == (5, 5)
    assert conv.pads((10, 11)) == (2, 2, 2, 2)
    assert conv.output_shape((10, 11), conv.pads((10, 11))) == (10, 6)
    # a dynamic weight blob's kernel replaces the params'
    assert conv.extents((1, 1)) == (1, 1)
    conv1d = _layer(Convolution1D, kernel_w=3, pad_left=LOWER, pad_right=LOWER)
    assert conv1d.pads((8,)) == (1, 1)
    pool = _layer(Pooling, kernel_w=2, kernel_h=2, stride_w=2, stride_h=2, pad_mode=2)
    assert pool.pads((5, 5)) == (0, 1, 0, 1)


def test_window_in_three_dimensions():
    class Window3D(g.Window):
        AXES = "dhw"

    layer = _layer(Window3D, kernel_d=3, kernel_h=3, kernel_w=3, stride_d=1, stride_h=1, stride_w=2)
    layer.pad_front = layer.pad_behind = layer.pad_top = layer.pad_bottom = UPPER
    layer.pad_left = layer.pad_right = UPPER
    pads = layer.pads((4, 5, 9))
    assert pads == (1, 1, 1, 1, 1, 1)
    assert layer.output_shape((4, 5, 9), pads) == (4, 5, 5)


def test_a_padded_input_smaller_than_the_kernel_is_logged(caplog):
    conv = _layer(Convolution, kernel_w=5, kernel_h=5, stride_w=1, stride_h=1)
    conv.name = "c"
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert conv.output_shape((3, 4), (0, 0, 0, 0)) is None
    assert "Convolution 'c': input 4x3 padded to 4x3 is smaller than the kernel (extent 5x5)" in caplog.text
