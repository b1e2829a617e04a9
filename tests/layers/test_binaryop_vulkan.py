"""BinaryOp on the GPU over the option grid: every op (same shapes and scalar form), and
every row of ncnn's broadcasting tables in both operand orders, at the doc's sizes and at
4x them (every outer axis then packs, so pack4/pack1 mixes occur)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer_gpu, make_param, randn, rng, run_net_gpu

pytestmark = pytest.mark.gpu

# sweeps run two option sets by default (fp32 unpacked, fp16 packed) and the whole grid as slow
GRIDS = [
    pytest.param(["fp32", "fp16sa-pack"], id="fast"),
    pytest.param(None, id="full", marks=pytest.mark.slow),
]

POW_LIKE = (6, 9)
# fmod, floor_divide and remainder jump by a whole divisor where the quotient crosses an
# integer (or a half): fp16 inputs move a few quotients across, which is fp16's own rounding
# rather than a layer error (measured rel L2 in fp16: up to 0.069 for rfmod, 0.011 for
# floor_divide, 0.020 for rremainder; 0 or ~1e-7 in fp32). They run the fp32 sets only.
STEP_OPS = (12, 13, 15, 16, 17, 18)


def _operands(op, a_shape, b_shape, key=""):
    g = rng("binaryop-vk", op, a_shape, b_shape, key)
    a = randn(g, a_shape, 2.0)
    b = randn(g, b_shape, 2.0)
    if op in POW_LIKE:
        a = np.clip(np.abs(a) + np.float32(0.25), 0.25, 3.0).astype(np.float32)
        b = np.clip(np.abs(b) + np.float32(0.25), 0.25, 3.0).astype(np.float32)
    return a, b


def _check(op, a_shape, b_shape, key="", grid=None):
    a, b = _operands(op, a_shape, b_shape, key)
    if op in STEP_OPS:
        grid = ["fp32", "fp32-pack"]
    return check_layer_gpu("BinaryOp", {0: op}, [], [a, b], grid=grid)


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("op", range(19))
def test_ops_same_shape(op, grid):
    shapes = [(7,), (7, 13), (3, 7, 13), (8, 5, 7), (2, 3, 5, 7), (4, 3, 5, 7)]
    for shape in shapes if grid is None else shapes[1::2]:
        _check(op, shape, shape, grid=grid)


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("op", range(19))
def test_ops_scalar(op, grid):
    for shape in SHAPES_ALL + [(8, 5, 7)] if grid is None else [(7,), (8, 5, 7), (2, 3, 5, 7)]:
        x = randn(rng("binaryop-vk-scalar", op, shape), shape, 2.0)
        b = -1.75 if op not in POW_LIKE else 1.5
        if op in POW_LIKE:
            x = np.abs(x) + np.float32(0.25)
        check_layer_gpu(
            "BinaryOp", {0: op, 1: 1, 2: b}, [], [x], grid=["fp32", "fp32-pack"] if op in STEP_OPS else grid
        )


def test_scalar_in_place_lightmode():
    x = randn(rng("binaryop-vk-light"), (8, 5, 7))
    check_layer_gpu("BinaryOp", {0: 2, 1: 1, 2: 0.5}, [], [x], lightmode=True)


def _np(shape_whc: str) -> tuple[int, ...]:
    return tuple(int(s) for s in shape_whc.strip("[]").split(","))[::-1]


SCALAR_LIKE = [
    ("[2]", "[1]"), ("[2,3]", "[1]"), ("[2,3]", "[1,1]"), ("[2,3,4]", "[1]"), ("[2,3,4]", "[1,1]"),
    ("[2,3,4]", "[1,1,1]"), ("[2,3,4,5]", "[1]"), ("[2,3,4,5]", "[1,1]"), ("[2,3,4,5]", "[1,1,1]"),
    ("[2,3,4,5]", "[1,1,1,1]"),
]  # fmt: skip
NO_BROADCAST = [("[2]", "[2]"), ("[2,3]", "[2,3]"), ("[2,3,4]", "[2,3,4]"), ("[2,3,4,5]", "[2,3,4,5]")]
EXPLICIT = [
    ("[2,3]", "[1,3]"), ("[2,3]", "[2,1]"), ("[2,3,4]", "[1,3,4]"), ("[2,3,4]", "[2,1,4]"),
    ("[2,3,4]", "[2,3,1]"), ("[2,3,4]", "[1,1,4]"), ("[2,3,4]", "[1,3,1]"), ("[2,3,4]", "[2,1,1]"),
    ("[2,3,4,5]", "[1,3,4,5]"), ("[2,3,4,5]", "[2,1,4,5]"), ("[2,3,4,5]", "[2,3,1,5]"),
    ("[2,3,4,5]", "[2,3,4,1]"), ("[2,3,4,5]", "[1,1,4,5]"), ("[2,3,4,5]", "[1,3,1,5]"),
    ("[2,3,4,5]", "[1,3,4,1]"), ("[2,3,4,5]", "[2,1,1,5]"), ("[2,3,4,5]", "[2,1,4,1]"),
    ("[2,3,4,5]", "[2,3,1,1]"), ("[2,3,4,5]", "[1,1,1,5]"), ("[2,3,4,5]", "[1,1,4,1]"),
    ("[2,3,4,5]", "[1,3,1,1]"), ("[2,3,4,5]", "[2,1,1,1]"),
]  # fmt: skip
IMPLICIT_INNER = [
    ("[2,3]", "[3]"), ("[2,3,4]", "[4]"), ("[2,3,4]", "[3,4]"), ("[2,3,4,5]", "[5]"),
    ("[2,3,4,5]", "[4,5]"), ("[2,3,4,5]", "[3,4,5]"),
]  # fmt: skip
IMPLICIT_OUTER = [("[2,3]", "[2]"), ("[2,3,4]", "[2]"), ("[2,3,4,5]", "[2]")]
TABLE = SCALAR_LIKE + NO_BROADCAST + EXPLICIT + IMPLICIT_INNER + IMPLICIT_OUTER


def _scaled(shape, k):
    return tuple(n * k if n != 1 else 1 for n in shape)


@pytest.mark.parametrize(
    "scale,grid",
    [
        # scale 4 packs every outer axis: the packed sets are the ones that matter by default
        pytest.param(4, ["fp32-pack", "fp16s-pack"], id="x4-fast"),
        pytest.param(4, None, id="x4-full", marks=pytest.mark.slow),
        pytest.param(1, None, id="x1-full", marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("pair", TABLE, ids=lambda p: f"{p[0]}-{p[1]}")
def test_broadcast_table(pair, scale, grid):
    a_shape, b_shape = (_scaled(_np(s), scale) for s in pair)
    # sub is not symmetric: both orders check that each operand is addressed as itself
    _check(1, a_shape, b_shape, "ab", grid)
    _check(1, b_shape, a_shape, "ba", grid)


@pytest.mark.parametrize(
    "pair",
    [((8, 5, 7), (8,)), ((8, 5, 7), (7,)), ((3, 7, 13), (13,)), ((8, 5, 7), (8, 5)), ((8, 12), (8,)),
     ((4, 8, 5, 7), (4, 8, 5)), ((4, 8, 5, 7), (4, 1, 1, 1)), ((8, 5, 7), (8, 1, 1)), ((12, 7), (12, 1))],
    ids=str,
)  # fmt: skip
def test_broadcast_packed_mixes(pair):
    a_shape, b_shape = pair
    for op in (0, 3, 7):
        _check(op, a_shape, b_shape, "mix", ["fp32-pack", "fp16s-pack", "fp16pa-pack"])
        _check(op, b_shape, a_shape, "mix-r", ["fp32-pack", "fp16sa-pack"])


def test_big_blob():
    _check(0, (3, 227, 227), (3, 227, 227), grid=["fp32", "fp16s-pack"])
    _check(2, (16, 57, 57), (16, 1, 1), grid=["fp32-pack", "fp16sa-pack"])
    _check(1, (3, 227, 227), (227,), grid=["fp32", "fp16s"])


def test_bad_shapes_fail(caplog):
    a = np.zeros((3, 4, 5), np.float32)
    b = np.zeros((3, 2, 5), np.float32)
    param = make_param("BinaryOp", {0: 0}, [a.shape, b.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, b"", [a, b], 1, use_packing_layout=True)
    assert ret != 0
    assert "cannot broadcast" in caplog.text
