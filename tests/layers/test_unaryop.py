"""UnaryOp: every op_type 0..27 against the PyPI ncnn oracle over every dims, with inputs inside
each op's domain; one case list on every backend (oracle.backends: the CPU, and on the GPU the
shared activation.comp over the option grid)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from oracle import SHAPES_ALL, SPOT_GRID, backends, check, rng, run_layer

PATHS = ("layer", "inplace", "net")

# op_type -> (name, input range inside the op's domain); exact ops compare with tol 0
OPS = {
    0: ("abs", (-10, 10)), 1: ("neg", (-10, 10)), 2: ("floor", (-10, 10)), 3: ("ceil", (-10, 10)),
    4: ("square", (-10, 10)), 5: ("sqrt", (0.01, 10)), 6: ("rsqrt", (0.01, 10)), 7: ("exp", (-10, 10)),
    8: ("log", (0.01, 10)), 9: ("sin", (-10, 10)), 10: ("cos", (-10, 10)), 11: ("tan", (-1.5, 1.5)),
    12: ("asin", (-0.99, 0.99)), 13: ("acos", (-0.99, 0.99)), 14: ("atan", (-10, 10)),
    15: ("reciprocal", (-10, 10)), 16: ("tanh", (-10, 10)), 17: ("log10", (0.01, 10)),
    18: ("round", (-10, 10)), 19: ("trunc", (-10, 10)), 20: ("sign", (-10, 10)), 21: ("expm1", (-10, 10)),
    22: ("sinh", (-10, 10)), 23: ("asinh", (-10, 10)), 24: ("cosh", (-10, 10)), 25: ("acosh", (1.0, 10)),
    26: ("atanh", (-0.99, 0.99)), 27: ("log1p", (-0.99, 10)),
}  # fmt: skip
EXACT = {0, 1, 2, 3, 4, 18, 19, 20}
# ops whose fp32 GPU result is exact too (square rounds once more in the shader's fma)
EXACT_GPU = EXACT - {4}
# the full grid on a packed and an odd blob; every other rank on the grid's two ends
GRID_SHAPES = [(8, 5, 7), (3, 7, 13)]
SHAPES = [s for s in SHAPES_ALL + [(4, 2, 3, 5), (12,), (8, 3)] if s not in GRID_SHAPES]


def _input(op_type, shape):
    lo, hi = OPS[op_type][1]
    x = rng("unaryop", op_type, shape).uniform(lo, hi, shape).astype(np.float32)
    if op_type in (18, 20):
        # exact halves (round to even) and zeros (sign) are where the definitions differ
        x = np.round(x * 2) / 2
    if op_type in (2, 3, 19):
        # fp16 storage rounds 2.999 to 3.0, flipping floor/ceil/trunc by a whole unit (measured
        # 1.04e-2 rel L2 on (8, 5, 7)): values fp16 holds exactly, as a real fp16 net feeds
        x = x.astype(np.float16).astype(np.float32)
    return x


def _check(backend, op_type, shape):
    tol = 0.0 if op_type in EXACT else 1e-5
    tol_fp32 = 0.0 if op_type in EXACT_GPU else 1e-4
    x = _input(op_type, shape)
    check(backend, "UnaryOp", {0: op_type}, [], [x], tol=tol, tol_fp32=tol_fp32, paths=PATHS)


@pytest.mark.parametrize("shape", GRID_SHAPES, ids=str)
@pytest.mark.parametrize("op_type", sorted(OPS))
@pytest.mark.parametrize("backend", backends("UnaryOp"))
def test_unaryop(op_type, shape, backend):
    _check(backend, op_type, shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op_type", sorted(OPS))
# the GPU half of this sweep belongs to the slow job (as before the merge): 28 ops x 13 shapes
@pytest.mark.parametrize("backend", backends("UnaryOp", grid=SPOT_GRID, slow_gpu=True))
def test_unaryop_every_rank(op_type, shape, backend):
    _check(backend, op_type, shape)


@pytest.mark.parametrize("backend", backends("UnaryOp"))
def test_round_half_to_even(backend):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997], np.float32)
    errs = check(backend, "UnaryOp", {0: 18}, [], [x], tol=0.0, tol_fp32=0.0, tol_fp16=0.0, paths=PATHS)
    assert max(errs.values()) == 0.0
    ret, (y,) = run_layer("UnaryOp", {0: 18}, [], [x])
    assert ret == 0 and y.tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 4.0, 0.0]


@pytest.mark.parametrize("backend", backends("UnaryOp"))
def test_default_is_abs(backend):
    x = np.array([-1.5, 2.0, -0.0], np.float32)
    check(backend, "UnaryOp", {}, [], [x], tol=0.0, tol_fp32=0.0, paths=PATHS)


def test_out_of_domain_gives_nan_like_ncnn():
    x = np.array([-4.0, -1.0, 0.25, 9.0], np.float32)
    ret, (y,) = run_layer("UnaryOp", {0: 5}, [], [x])
    assert ret == 0 and np.isnan(y[:2]).all() and y[2:].tolist() == [0.5, 3.0]


@pytest.mark.parametrize("op_type", [-1, 28, 100])
def test_unknown_op_type_is_rejected(op_type, caplog):
    x = np.ones((2, 3, 4), np.float32)
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        ret, _ = run_layer("UnaryOp", {0: op_type}, [], [x])
    assert ret != 0
    assert f"unknown op_type {op_type}" in caplog.text


@pytest.mark.gpu
def test_unknown_op_type_is_rejected_by_the_gpu_layer():
    from ncnn_c.layer import create_layer_vulkan
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_vulkan("UnaryOp")
    pd = ParamDict()
    pd.set(0, 28)
    assert layer.load_param(pd) != 0
