"""Interp against the PyPI ncnn oracle: nearest/bilinear/bicubic, scales and fixed sizes,
align_corner, the reference-blob form, and ncnn's 1-D and 2-D rules."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import check_layer, randn, rng, run_layer

TYPES = {"nearest": 1, "bilinear": 2, "bicubic": 3}


def interp_inputs(shape, params, ref_shape=None):
    """The input blob, and the reference blob when ``ref_shape`` is given (shared with
    test_interp_vulkan.py)."""
    g = rng("interp", shape, sorted(params.items()), ref_shape)
    x = randn(g, shape, 2.0)
    return [x] if ref_shape is None else [x, randn(g, ref_shape)]


def case(shape, params, ref_shape=None, tol=1e-5):
    inputs = interp_inputs(shape, params, ref_shape)
    # nearest is a pure copy: bit-exact
    tol = 0.0 if params.get(0) == 1 else tol
    return check_layer("Interp", params, [], inputs, tol=tol)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize(
    "shape,out_hw",
    [
        ((3, 7, 13), (14, 26)),  # 2x up
        ((3, 7, 13), (5, 9)),  # down
        ((3, 7, 13), (21, 5)),  # up one axis, down the other
        ((2, 16, 16), (23, 37)),
        ((4, 9, 11), (1, 1)),
        ((2, 5, 6), (7, 6)),  # width unchanged
        ((2, 40, 33), (12, 17)),  # strong shrink: bicubic taps spread out
        ((3, 227, 227), (113, 300)),
    ],
    ids=str,
)
def test_interp_fixed_size(shape, out_hw, kind, align):
    case(shape, {0: TYPES[kind], 3: out_hw[0], 4: out_hw[1], 6: align})


@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("scales", [(2.0, 2.0), (0.5, 0.5), (1.5, 3.0), (3.3, 0.7), (1.0, 2.5)], ids=str)
def test_interp_scales(scales, kind):
    # the scale decides the size (truncated) and, for nearest, the source step 1/scale
    case((3, 9, 10), {0: TYPES[kind], 1: scales[0], 2: scales[1]})
    case((2, 7, 13), {0: TYPES[kind], 1: scales[0], 2: scales[1], 6: 1})


@pytest.mark.parametrize("kind", TYPES, ids=str)
def test_interp_one_axis_set_takes_the_scales(kind):
    # only output_width set: the size comes from the scales, nearest still steps by w / outw
    case((3, 8, 10), {0: TYPES[kind], 4: 7, 1: 2.0, 2: 3.0})
    case((3, 8, 10), {0: TYPES[kind], 3: 7, 1: 0.5, 2: 1.5})


@pytest.mark.parametrize("kind", TYPES, ids=str)
def test_interp_identity_passes_through(kind):
    case((3, 7, 13), {0: TYPES[kind]})
    case((3, 7, 13), {0: TYPES[kind], 3: 7, 4: 13})


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("shape,outw", [((7, 13), 26), ((7, 13), 5), ((16, 32), 45), ((1, 5), 9)], ids=str)
def test_interp_2d_resizes_width_only(shape, outw, kind, align):
    case(shape, {0: TYPES[kind], 3: 99, 4: outw, 6: align})
    case(shape, {0: TYPES[kind], 1: 3.0, 2: outw / shape[1] + 1e-4, 6: align})


@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("shape", [(1,), (7,), (64,)], ids=str)
def test_interp_1d_fills_planes(shape, kind):
    case(shape, {0: TYPES[kind], 3: 3, 4: 5})
    case(shape, {0: TYPES[kind], 1: 2.0, 2: 4.0})
    case(shape, {0: TYPES[kind]})


@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("ref_shape", [(5, 11, 19), (1, 4, 6), (3, 7, 13), (9, 12), (17,)], ids=str)
def test_interp_dynamic_target_size(ref_shape, kind):
    # the reference blob's w x h is the output size; nearest then steps by 1/scale (ncnn's rule)
    case((3, 7, 13), {0: TYPES[kind], 5: 1}, ref_shape=ref_shape)
    case((3, 7, 13), {0: TYPES[kind], 5: 1, 6: 1, 1: 0.5, 2: 0.5}, ref_shape=ref_shape)
    case((6, 10), {0: TYPES[kind], 5: 1}, ref_shape=ref_shape)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("kind", ["bilinear", "bicubic"])
@pytest.mark.parametrize("hw", [(1, 1), (1, 4), (2, 2), (3, 3), (4, 5)], ids=str)
def test_interp_tiny_inputs_fold_onto_edges(hw, kind, align):
    # windows wider than the input: every weight lands on the edge pixels (ncnn's bicubic reads
    # past rows narrower than 4, but only with zero weights, which is why clamped taps agree)
    case((2, *hw), {0: TYPES[kind], 3: 9, 4: 7, 6: align})


def test_interp_nearest_odd_sizes():
    case((1, 1, 1), {0: 1, 3: 5, 4: 3})
    case((3, 227, 227), {0: 1, 1: 2.0, 2: 2.0})
    case((3, 227, 227), {0: 1, 3: 100, 4: 100})


@pytest.mark.parametrize(
    "params,inputs,text",
    [
        ({0: 4}, [(2, 3, 3)], "resize_type"),
        ({0: 0, 3: 5, 4: 5}, [(2, 3, 3)], "resize_type 0"),
        ({0: 2, 1: 0.1, 2: 0.1}, [(2, 3, 3)], "empty"),
        ({0: 2, 3: 4, 4: 4}, [(2, 2, 3, 3)], "dims 4"),
        ({0: 2, 5: 1}, [(2, 3, 3)], "reference"),
    ],
    ids=str,
)
def test_interp_rejects(params, inputs, text, caplog):
    g = rng("interp-bad", str(params))
    xs = [randn(g, s) for s in inputs]
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("Interp", params, [], xs)
    assert ret != 0
    assert text in caplog.text


def test_interp_refuses_a_malformed_size_expr(caplog):
    # ']' is no token of ncnn's expression language: refused at load, with the param named
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    pd = ParamDict()
    pd.set(0, 2)
    pd.set(9, "[*(0w,2),*(0h,2)]")
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        assert create_layer_cpu("Interp").load_param(pd) != 0
    assert "size_expr" in caplog.text


def test_interp_coefficients_sum_to_one():
    from ncnn_c.layer.interp import cubic_coeffs, linear_coeffs

    for n, out in ((7, 13), (13, 7), (4, 9), (9, 1)):
        for align in (0, 1):
            _, a = linear_coeffs(n, out, align)
            np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-6)
            _, k = cubic_coeffs(n, out, 0)
            np.testing.assert_allclose(k.sum(axis=1), 1.0, atol=1e-5)
