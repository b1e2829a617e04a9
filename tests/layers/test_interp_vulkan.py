"""Interp on the GPU over the option grid: nearest/bilinear/bicubic, fixed sizes and scales,
align_corner, the reference-blob form, ncnn's 1-D and 2-D rules, channel counts that pack
and do not, tiny inputs whose windows fold onto the edges, and refused inputs."""

from __future__ import annotations

import logging

import pytest
from oracle import check_layer_gpu, make_bin, make_param, randn, rng, run_net_gpu
from test_interp import TYPES, interp_inputs

pytestmark = pytest.mark.gpu

FAST = ["fp32", "fp32-pack", "fp16s-pack", "fp16pa-pack"]


def case(shape, params, ref_shape=None, grid=FAST):
    return check_layer_gpu("Interp", params, [], interp_inputs(shape, params, ref_shape), grid=grid)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize(
    "shape,out_hw",
    [
        ((3, 7, 13), (14, 26)),
        ((8, 7, 13), (5, 9)),
        ((8, 5, 6), (21, 5)),
        pytest.param((4, 9, 11), (1, 1), marks=pytest.mark.slow),
        pytest.param((2, 40, 33), (12, 17), marks=pytest.mark.slow),
    ],
    ids=str,
)
def test_fixed_size(shape, out_hw, kind, align):
    case(shape, {0: TYPES[kind], 3: out_hw[0], 4: out_hw[1], 6: align})


@pytest.mark.parametrize("kind", TYPES, ids=str)
def test_full_grid(kind):
    case((8, 7, 13), {0: TYPES[kind], 1: 2.0, 2: 2.0}, grid=None)
    case((3, 7, 13), {0: TYPES[kind], 3: 5, 4: 20, 6: 1}, grid=None)


@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("scales", [(2.0, 2.0), (0.5, 0.5), (3.3, 0.7)], ids=str)
def test_scales(scales, kind):
    case((4, 9, 10), {0: TYPES[kind], 1: scales[0], 2: scales[1]})
    case((2, 7, 13), {0: TYPES[kind], 1: scales[0], 2: scales[1], 6: 1})


@pytest.mark.parametrize("kind", TYPES, ids=str)
def test_one_axis_set_and_identity(kind):
    case((3, 8, 10), {0: TYPES[kind], 4: 7, 1: 2.0, 2: 3.0})
    case((8, 7, 13), {0: TYPES[kind], 3: 7, 4: 13})


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("shape,outw", [((7, 13), 26), ((8, 13), 5), ((1, 5), 9)], ids=str)
def test_2d_resizes_width_only(shape, outw, kind, align):
    case(shape, {0: TYPES[kind], 3: 99, 4: outw, 6: align})


@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize("shape", [(1,), (7,), (64,)], ids=str)
def test_1d_fills_planes(shape, kind):
    case(shape, {0: TYPES[kind], 3: 3, 4: 5})
    case(shape, {0: TYPES[kind], 1: 2.0, 2: 4.0})


@pytest.mark.parametrize("kind", TYPES, ids=str)
@pytest.mark.parametrize(
    "ref_shape",
    [
        (5, 11, 19),
        (9, 12),
        pytest.param((8, 4, 6), marks=pytest.mark.slow),
        pytest.param((17,), marks=pytest.mark.slow),
    ],
    ids=str,
)
def test_dynamic_target_size(ref_shape, kind):
    case((3, 7, 13), {0: TYPES[kind], 5: 1}, ref_shape=ref_shape)
    case((8, 7, 13), {0: TYPES[kind], 5: 1, 6: 1, 1: 0.5, 2: 0.5}, ref_shape=ref_shape)
    case((8, 10), {0: TYPES[kind], 5: 1}, ref_shape=ref_shape)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("kind", ["bilinear", "bicubic"])
@pytest.mark.parametrize(
    "hw",
    [
        (1, 1),
        (3, 3),
        pytest.param((1, 4), marks=pytest.mark.slow),
        pytest.param((2, 2), marks=pytest.mark.slow),
    ],
    ids=str,
)
def test_tiny_inputs_fold_onto_edges(hw, kind, align):
    case((4, *hw), {0: TYPES[kind], 3: 9, 4: 7, 6: align})


def test_big():
    case((3, 227, 227), {0: 2, 3: 113, 4: 300})
    case((3, 227, 227), {0: 1, 1: 2.0, 2: 2.0}, grid=["fp32-pack"])


@pytest.mark.parametrize(
    "params,shape,text",
    [
        ({0: 0, 3: 5, 4: 5}, (2, 3, 3), "resize_type 0"),
        ({0: 2, 1: 0.1, 2: 0.1}, (2, 3, 3), "empty"),
        ({0: 2, 3: 4, 4: 4}, (4, 2, 3, 3), "dims 4"),
    ],
    ids=str,
)
def test_rejects(params, shape, text, caplog):
    x = randn(rng("interp-bad", str(params)), shape)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(
            make_param("Interp", params, [shape]), make_bin([]), [x], use_packing_layout=True
        )
    assert ret != 0 and text in caplog.text
