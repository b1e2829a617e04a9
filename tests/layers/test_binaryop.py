"""BinaryOp against the oracle: every op, the scalar form (also in place) and every row of
ncnn's broadcasting tables (binaryop-broadcasting.md), for both operand orders, at the doc's
sizes and at 4x them (every outer axis then packs on the GPU), every pair of ranks; each case on
every backend (oracle.backends: the CPU, and the GPU option grid); then the GPU's pack4/pack1
mixes, the CPU's output shapes and flags, and bad input on both."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import (
    SHAPES_ALL,
    SPOT_GRID,
    backends,
    case_backends,
    check,
    check_layer_gpu,
    make_param,
    randn,
    rng,
    run_layer,
    run_net_gpu,
)

# ops whose first operand is a base of pow, or a divisor: keep those operands away from 0
POW_LIKE = (6, 9)
ALL_OPS = range(19)
# fmod, floor_divide and remainder jump by a whole divisor where the quotient crosses an
# integer (or a half): fp16 inputs move a few quotients across, which is fp16's own rounding
# rather than a layer error (measured rel L2 in fp16: up to 0.069 for rfmod, 0.011 for
# floor_divide, 0.020 for rremainder; 0 or ~1e-7 in fp32). They run the fp32 GPU sets only.
STEP_OPS = (12, 13, 15, 16, 17, 18)
FP32_SETS = ["fp32", "fp32-pack"]
SLOW = pytest.mark.slow


def with_backends(cases, gpu_main=None, sweep=None):
    """oracle.case_backends for BinaryOp: the fp32 GPU sets only for STEP_OPS; a case that
    ``sweep(case)`` says is part of a long sweep runs on SPOT_GRID, its GPU runs all in the slow
    run; ``gpu_main`` as there."""

    def grid_of(case):
        return FP32_SETS if case[0] in STEP_OPS else (SPOT_GRID if sweep and sweep(case) else None)

    def main(case):
        return not (sweep and sweep(case)) and (gpu_main is None or gpu_main(case))

    return case_backends("BinaryOp", cases, grid_of, main)


def _operands(op: int, a_shape, b_shape, key):
    g = rng("binaryop", op, a_shape, b_shape, key)
    a = randn(g, a_shape, 2.0)
    b = randn(g, b_shape, 2.0)
    if op in POW_LIKE:
        # positive bases and moderate exponents keep pow finite and real
        a = np.abs(a) + np.float32(0.25)
        b = np.abs(b) + np.float32(0.25)
        b = np.clip(b, 0.25, 3.0).astype(np.float32)
        a = np.clip(a, 0.25, 3.0).astype(np.float32)
    return a, b


def _check(backend, op: int, a_shape, b_shape, key=""):
    a, b = _operands(op, a_shape, b_shape, key)
    return check(backend, "BinaryOp", {0: op}, [], [a, b])


def _np(shape_whc: str) -> tuple[int, ...]:
    """A shape written as the doc does ([w,h,c]) in numpy order."""
    return tuple(int(s) for s in shape_whc.strip("[]").split(","))[::-1]


# -- every op, same shapes and scalar form ---------------------------------------------------------
# (8, 5, 7) and (4, 3, 5, 7): the GPU packs their channels, in the slow run with the packed sets
SAME_SHAPES = [(7,), (7, 13), (3, 7, 13), (2, 3, 5, 7)]
SAME_CASES = [(op, s) for op in ALL_OPS for s in SAME_SHAPES]
SAME_CASES += [pytest.param(op, s, marks=SLOW) for op in ALL_OPS for s in [(8, 5, 7), (4, 3, 5, 7)]]


@pytest.mark.parametrize("op,shape,backend", with_backends(SAME_CASES))
def test_ops_same_shape(op, shape, backend):
    _check(backend, op, shape, shape)


# the GPU checks every shape in the slow run, (7,) and (2, 3, 5, 7) in the main run too
SCALAR_CASES = [(op, s) for op in ALL_OPS for s in SHAPES_ALL]
SCALAR_CASES += [pytest.param(op, (8, 5, 7), marks=SLOW) for op in ALL_OPS]


@pytest.mark.parametrize(
    "op,shape,backend", with_backends(SCALAR_CASES, gpu_main=lambda c: c[1] in [(7,), (2, 3, 5, 7)])
)
def test_ops_scalar(op, shape, backend):
    g = rng("binaryop-scalar", op, shape)
    x = randn(g, shape, 2.0)
    b = -1.75 if op not in POW_LIKE else 1.5
    if op in POW_LIKE:
        x = np.abs(x) + np.float32(0.25)
    check(backend, "BinaryOp", {0: op, 1: 1, 2: b}, [], [x], paths=("layer", "inplace", "net"))


@pytest.mark.parametrize(
    "shape,params,n_inputs",
    [
        ((3, 7, 13), {0: 0, 1: 1}, 1),  # b defaults to 0
        ((3, 7, 13), {0: 4, 1: 1}, 1),
        ((3, 7, 13), {}, 2),  # every param at its default: add
        ((8, 5, 7), {0: 2, 1: 1, 2: 0.5}, 1),  # in place on the GPU too (light mode)
    ],
    ids=str,
)
@pytest.mark.parametrize("backend", backends("BinaryOp"))
def test_scalar_defaults_and_in_place(shape, params, n_inputs, backend):
    x = randn(rng("binaryop-default", shape, str(params)), shape)
    paths = ("layer", "inplace", "net") if n_inputs == 1 else ("layer", "net")
    check(backend, "BinaryOp", params, [], [x] * n_inputs, paths=paths, lightmode=True)


@pytest.mark.parametrize(
    "op,a_shape,b_shape",
    [
        (0, (3, 227, 227), (3, 227, 227)),
        (2, (3, 227, 227), (3,)),
        (1, (3, 227, 227), (227,)),
        (2, (16, 57, 57), (16, 1, 1)),
    ],
    ids=str,
)
@pytest.mark.parametrize("backend", backends("BinaryOp"))
def test_big_blob(op, a_shape, b_shape, backend):
    _check(backend, op, a_shape, b_shape)


# -- the doc's broadcasting tables ----------------------------------------------------------------
SCALAR_LIKE = [
    ("[2]", "[1]"),
    ("[2,3]", "[1]"),
    ("[2,3]", "[1,1]"),
    ("[2,3,4]", "[1]"),
    ("[2,3,4]", "[1,1]"),
    ("[2,3,4]", "[1,1,1]"),
    ("[2,3,4,5]", "[1]"),
    ("[2,3,4,5]", "[1,1]"),
    ("[2,3,4,5]", "[1,1,1]"),
    ("[2,3,4,5]", "[1,1,1,1]"),
]
NO_BROADCAST = [("[2]", "[2]"), ("[2,3]", "[2,3]"), ("[2,3,4]", "[2,3,4]"), ("[2,3,4,5]", "[2,3,4,5]")]
EXPLICIT = [
    ("[2,3]", "[1,3]"),
    ("[2,3]", "[2,1]"),
    ("[2,3,4]", "[1,3,4]"),
    ("[2,3,4]", "[2,1,4]"),
    ("[2,3,4]", "[2,3,1]"),
    ("[2,3,4]", "[1,1,4]"),
    ("[2,3,4]", "[1,3,1]"),
    ("[2,3,4]", "[2,1,1]"),
    ("[2,3,4,5]", "[1,3,4,5]"),
    ("[2,3,4,5]", "[2,1,4,5]"),
    ("[2,3,4,5]", "[2,3,1,5]"),
    ("[2,3,4,5]", "[2,3,4,1]"),
    ("[2,3,4,5]", "[1,1,4,5]"),
    ("[2,3,4,5]", "[1,3,1,5]"),
    ("[2,3,4,5]", "[1,3,4,1]"),
    ("[2,3,4,5]", "[2,1,1,5]"),
    ("[2,3,4,5]", "[2,1,4,1]"),
    ("[2,3,4,5]", "[2,3,1,1]"),
    ("[2,3,4,5]", "[1,1,1,5]"),
    ("[2,3,4,5]", "[1,1,4,1]"),
    ("[2,3,4,5]", "[1,3,1,1]"),
    ("[2,3,4,5]", "[2,1,1,1]"),
]
IMPLICIT_INNER = [
    ("[2,3]", "[3]"),
    ("[2,3,4]", "[4]"),
    ("[2,3,4]", "[3,4]"),
    ("[2,3,4,5]", "[5]"),
    ("[2,3,4,5]", "[4,5]"),
    ("[2,3,4,5]", "[3,4,5]"),
]
IMPLICIT_OUTER = [("[2,3]", "[2]"), ("[2,3,4]", "[2]"), ("[2,3,4,5]", "[2]")]
TABLE = SCALAR_LIKE + NO_BROADCAST + EXPLICIT + IMPLICIT_INNER + IMPLICIT_OUTER


def _scaled(shape, k):
    return tuple(n * k if n != 1 else 1 for n in shape)


# (op, A, B, scale): sub and div are not symmetric, so they catch a swapped operand; B op A
# covers the mirror. The GPU runs sub in the main run and over the whole grid; div and atan2,
# which only the CPU's list had, are a sweep on SPOT_GRID in the slow run (on the whole grid
# they made 1260 of the slow run's GPU runs). At 4x (every outer axis packs) the whole case is
# in the slow run, with the packed sets.
BROADCAST = [(op, a, b, 1) for a, b in TABLE for op in (1, 3, 10)]
BROADCAST += [(op, b, a, 1) for a, b in TABLE for op in (1, 3, 10)]
BROADCAST += [pytest.param(1, a, b, 4, marks=SLOW) for a, b in TABLE]
BROADCAST += [pytest.param(1, b, a, 4, marks=SLOW) for a, b in TABLE]


@pytest.mark.parametrize("op,a,b,scale,backend", with_backends(BROADCAST, sweep=lambda c: c[0] != 1))
def test_broadcast_table(op, a, b, scale, backend):
    _check(backend, op, _scaled(_np(a), scale), _scaled(_np(b), scale))


def test_broadcast_table_output_shapes():
    """The C column of the doc: the output always has A's shape, in either operand order."""
    for a, b in TABLE:
        x = np.ones(_np(a), np.float32)
        y = np.ones(_np(b), np.float32)
        for pair in ([x, y], [y, x]):
            ret, out = run_layer("BinaryOp", {0: 0}, [], pair)
            assert ret == 0 and out[0].shape == x.shape, (a, b)


def test_same_size_prefers_inner_axis():
    """[2,2] with [2]: the 1-D blob runs along h (numpy rows), not w."""
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([10, 20], np.float32)
    ret, out = run_layer("BinaryOp", {0: 0}, [], [a, b])
    assert ret == 0
    np.testing.assert_array_equal(out[0], [[11, 12], [23, 24]])


@pytest.mark.parametrize("a_shape", [(2, 2), (3, 3, 3), (2, 2, 2, 2)], ids=str)
@pytest.mark.parametrize("backend", backends("BinaryOp"))
def test_same_size_prefers_inner_axis_on_every_backend(a_shape, backend):
    _check(backend, 1, a_shape, a_shape[:1])


# every pair of ranks, odd sizes, both sides broadcasting at once
RANK_PAIRS = [
    ((7,), (7,)),
    ((7,), (1,)),
    ((1,), (7,)),
    ((7, 13), (13,)),
    ((7, 13), (7,)),
    ((13,), (7, 13)),
    ((7, 1), (1, 13)),
    ((5, 7, 13), (5,)),
    ((5, 7, 13), (13,)),
    ((5, 7, 13), (5, 7)),
    ((5, 7), (5, 7, 13)),
    ((5, 1, 13), (1, 7, 1)),
    ((4, 5, 7, 13), (4,)),
    ((4, 5, 7, 13), (13,)),
    ((4, 5, 7, 13), (4, 5)),
    ((4, 5, 7, 13), (4, 5, 7)),
    ((4, 5, 7), (4, 5, 7, 13)),
    ((4, 1, 7, 1), (1, 5, 1, 13)),
    ((1, 1, 1, 1), (4, 5, 7, 13)),
]


# a long sweep (19 ops x 19 pairs): the GPU runs it on SPOT_GRID in the slow run, and the CPU
# runs four ops in the main run (the broadcasting is one code path for every op; each op is
# checked on its own above), the other fifteen in the slow run. With all of them in the main
# run this module's main run took 154 s against 119 s for the two modules it merges (two shared
# cores, load ~10): a CPU net check after the GPU is up costs more than one before it.
RANK_MAIN_OPS = (0, 1, 3, 7)
RANK_CASES = [
    (op, a, b) if op in RANK_MAIN_OPS else pytest.param(op, a, b, marks=SLOW)
    for op in ALL_OPS
    for a, b in RANK_PAIRS
]


@pytest.mark.parametrize("op,a_shape,b_shape,backend", with_backends(RANK_CASES, sweep=lambda c: True))
def test_rank_pairs(op, a_shape, b_shape, backend):
    _check(backend, op, a_shape, b_shape)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "pair",
    [((8, 5, 7), (8,)), ((8, 5, 7), (7,)), ((3, 7, 13), (13,)), ((8, 5, 7), (8, 5)), ((8, 12), (8,)),
     ((4, 8, 5, 7), (4, 8, 5)), ((4, 8, 5, 7), (4, 1, 1, 1)), ((8, 5, 7), (8, 1, 1)), ((12, 7), (12, 1))],
    ids=str,
)  # fmt: skip
def test_broadcast_packed_mixes(pair):
    # pack4 / pack1 operand mixes: the packed sets in the main run (backends() leaves them slow)
    a_shape, b_shape = pair
    for op in (0, 3, 7):
        a, b = _operands(op, a_shape, b_shape, "mix")
        check_layer_gpu("BinaryOp", {0: op}, [], [a, b], grid=["fp32-pack", "fp16s-pack", "fp16pa-pack"])
        b, a = _operands(op, b_shape, a_shape, "mix-r")
        check_layer_gpu("BinaryOp", {0: op}, [], [b, a], grid=["fp32-pack", "fp16sa-pack"])


# -- bad input --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((7,), (5,)),
        ((3, 4), (5,)),
        ((3, 4), (3, 5)),
        ((2, 3, 4), (3,)),
        ((2, 3, 4), (3, 3)),
        ((2, 3, 4, 5), (2, 4, 4, 5)),
    ],
)
def test_shapes_that_do_not_fit(a_shape, b_shape, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer(
            "BinaryOp", {0: 0}, [], [np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)]
        )
    assert ret != 0
    assert "cannot broadcast" in caplog.text


@pytest.mark.parametrize("op", [-1, 19, 100])
def test_unknown_op_rejected(op, caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("BinaryOp", {0: op}, [], [np.ones(3, np.float32), np.ones(3, np.float32)])
    assert ret != 0
    assert "op_type" in caplog.text


def test_one_blob_without_scalar_rejected(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("BinaryOp", {0: 0}, [], [np.ones(3, np.float32)])
    assert ret != 0
    assert "two input blobs" in caplog.text


def test_flags_follow_with_scalar():
    from ncnn_c.layer import create_layer_cpu
    from ncnn_c.paramdict import ParamDict

    for ws, expected in ((0, False), (1, True)):
        layer = create_layer_cpu("BinaryOp")
        pd = ParamDict()
        pd.set(1, ws)
        assert layer.load_param(pd) == 0
        assert layer.one_blob_only is expected and layer.support_inplace is expected


@pytest.mark.gpu
def test_bad_shapes_fail_on_the_gpu(caplog):
    a = np.zeros((3, 4, 5), np.float32)
    b = np.zeros((3, 2, 5), np.float32)
    param = make_param("BinaryOp", {0: 0}, [a.shape, b.shape], 1)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_net_gpu(param, b"", [a, b], 1, use_packing_layout=True)
    assert ret != 0
    assert "cannot broadcast" in caplog.text
