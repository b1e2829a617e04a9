"""UnaryOp on the GPU (every op_type through the shared activation.comp) over the option grid
against the PyPI ncnn CPU fp32 oracle, with inputs inside each op's domain."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import SHAPES_ALL, check_layer_gpu, rng

pytestmark = pytest.mark.gpu

# op_type -> input range inside the op's domain (as the CPU test)
OPS = {
    0: (-10, 10), 1: (-10, 10), 2: (-10, 10), 3: (-10, 10), 4: (-10, 10), 5: (0.01, 10),
    6: (0.01, 10), 7: (-10, 10), 8: (0.01, 10), 9: (-10, 10), 10: (-10, 10), 11: (-1.5, 1.5),
    12: (-0.99, 0.99), 13: (-0.99, 0.99), 14: (-10, 10), 15: (-10, 10), 16: (-10, 10),
    17: (0.01, 10), 18: (-10, 10), 19: (-10, 10), 20: (-10, 10), 21: (-10, 10), 22: (-10, 10),
    23: (-10, 10), 24: (-10, 10), 25: (1.0, 10), 26: (-0.99, 0.99), 27: (-0.99, 10),
}  # fmt: skip
# ops whose fp32 GPU result is exact (no rounding beyond the input's)
EXACT = {0, 1, 2, 3, 18, 19, 20}
SHAPES = SHAPES_ALL + [(8, 5, 7), (4, 2, 3, 5), (12,), (8, 3)]


def _input(op_type, shape):
    lo, hi = OPS[op_type]
    x = rng("unaryop-vk", op_type, shape).uniform(lo, hi, shape).astype(np.float32)
    if op_type in (18, 20):
        # exact halves (round to even) and zeros (sign)
        x = np.round(x * 2) / 2
    if op_type in (2, 3, 19):
        # fp16 storage rounds 2.999 to 3.0, flipping floor/ceil/trunc by a whole unit (measured
        # 1.04e-2 rel L2 on (8, 5, 7)): feed values fp16 holds exactly, as a real fp16 net does
        x = x.astype(np.float16).astype(np.float32)
    return x


@pytest.mark.parametrize("shape", [(8, 5, 7), (3, 7, 13)], ids=str)
@pytest.mark.parametrize("op_type", sorted(OPS))
def test_unaryop_grid(op_type, shape):
    errs = check_layer_gpu("UnaryOp", {0: op_type}, [], [_input(op_type, shape)])
    if op_type in EXACT:
        assert errs["fp32"] == 0.0 and errs["fp32-pack"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op_type", sorted(OPS))
def test_unaryop_all_shapes(op_type, shape):
    check_layer_gpu("UnaryOp", {0: op_type}, [], [_input(op_type, shape)])


def test_round_half_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997], np.float32)
    errs = check_layer_gpu("UnaryOp", {0: 18}, [], [x])
    assert max(errs.values()) == 0.0


def test_unknown_op_type_is_rejected():
    from ncnn_c.layer import create_layer_vulkan
    from ncnn_c.paramdict import ParamDict

    layer = create_layer_vulkan("UnaryOp")
    pd = ParamDict()
    pd.set(0, 28)
    assert layer.load_param(pd) != 0
