"""UnaryOp: one elementwise math function chosen by param 0 op_type (ncnn's numbering), in place.

0 abs, 1 neg, 2 floor, 3 ceil, 4 square, 5 sqrt, 6 rsqrt, 7 exp, 8 log, 9 sin, 10 cos, 11 tan,
12 asin, 13 acos, 14 atan, 15 reciprocal, 16 tanh, 17 log10, 18 round, 19 trunc, 20 sign,
21 expm1, 22 sinh, 23 asinh, 24 cosh, 25 acosh, 26 atanh, 27 log1p.

Round is ncnn's nearbyint under round-to-nearest: halves go to the even neighbour, which is
numpy's rint. Out-of-domain inputs give nan / inf as in ncnn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from . import Param
from ._elementwise import Elementwise, negate

log = logging.getLogger("ncnn_c")

_ZERO = np.float32(0.0)


def _rsqrt(x, out) -> None:
    np.sqrt(x, out=out)
    np.reciprocal(out, out=out)


def _sign(x, out) -> None:
    # ncnn's comparison chain: nan is neither above nor below zero, so its sign is 0
    pos = x > _ZERO
    np.subtract(pos, x < _ZERO, out=out, dtype=np.float32)


_OPS: dict[int, Callable[..., object]] = {
    0: np.abs, 1: negate, 2: np.floor, 3: np.ceil, 4: np.square, 5: np.sqrt, 6: _rsqrt,
    7: np.exp, 8: np.log, 9: np.sin, 10: np.cos, 11: np.tan, 12: np.arcsin, 13: np.arccos,
    14: np.arctan, 15: np.reciprocal, 16: np.tanh, 17: np.log10, 18: np.rint, 19: np.trunc,
    20: _sign, 21: np.expm1, 22: np.sinh, 23: np.arcsinh, 24: np.cosh, 25: np.arccosh,
    26: np.arctanh, 27: np.log1p,
}  # fmt: skip


class UnaryOp(Elementwise):
    PARAMS = (Param(0, "op_type", 0),)

    def check_params(self) -> int:
        if self.op_type not in _OPS:
            log.error("UnaryOp %r: unknown op_type %d", self.name, self.op_type)
            return -1
        return 0

    def apply(self, x, out) -> int:
        fn = _OPS.get(self.op_type)
        if fn is None:
            log.error("UnaryOp %r: unknown op_type %d", self.name, self.op_type)
            return -1
        fn(x, out=out)
        return 0
