"""BinaryOp: C = op(A, B) elementwise, fp32, with ncnn's broadcasting rules.

Two forms. With ``with_scalar`` (param 1) B is the float param ``b`` (param 2), the layer
takes one blob and can work in place. Otherwise it takes two blobs; the lower-rank one is
first given the rank of the other the way ncnn does (which is not numpy's way: in numpy
shape order a lower-rank blob lines up with the OUTER axes, e.g. a (c, h) blob against a
(c, h, w) blob becomes (c, h, 1)), then every axis must be equal or 1 on one side.
A 1-D blob is the exception: it lines up with the outermost axis (channels, or rows of a
2-D blob) when its length matches that axis, else with the innermost one (w).

Operations 0..11 are the documented ones; 12..18 (fmod, rfmod, logaddexp, floor_divide,
rfloor_divide, remainder, rremainder) are the newer ones ncnn also accepts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from . import Layer, Param
from ._elementwise import padded_flat

log = logging.getLogger("ncnn_c")


def _remainder(x, y, out):
    # C's remainderf: x - n*y with n = x/y rounded half to even; float64 makes the quotient
    # exact enough for fp32 inputs and the remainder itself is exactly representable
    x64 = np.asarray(x, dtype=np.float64)
    y64 = np.asarray(y, dtype=np.float64)
    return np.subtract(x64, np.rint(x64 / y64) * y64, out=out, casting="same_kind")


def _floor_divide(x, y, out):
    # floor(x / y) on the fp32 quotient (numpy's floor_divide rounds differently near integers)
    np.divide(x, y, out=out)
    return np.floor(out, out=out)


def _logaddexp(x, y, out):
    return np.logaddexp(x, y, out=out)


Fn = Callable[..., object]

# op(x, y, out) for the forward order; the r-variants swap their operands
_FORWARD_OPS: dict[int, Fn] = {
    0: np.add,
    1: np.subtract,
    2: np.multiply,
    3: np.divide,
    4: np.maximum,
    5: np.minimum,
    6: np.power,
    10: np.arctan2,
    12: np.fmod,
    14: _logaddexp,
    15: _floor_divide,
    17: _remainder,
}
_REVERSED = {7: 1, 8: 3, 9: 6, 11: 10, 13: 12, 16: 15, 18: 17}


def _apply(op_type: int, x, y, out) -> None:
    # pow of a negative base, 0/0 and the like give nan/inf exactly as C does: no warnings
    with np.errstate(all="ignore"):
        if op_type in _REVERSED:
            _FORWARD_OPS[_REVERSED[op_type]](y, x, out=out)
        else:
            _FORWARD_OPS[op_type](x, y, out=out)


def _expand(small: tuple[int, ...], big: tuple[int, ...]) -> tuple[int, ...]:
    """numpy shape ``small`` lifted to the rank of ``big`` as ncnn's BinaryOp does."""
    rank = len(big)
    if len(small) == 1:
        n = small[0]
        if n == big[0]:
            return (n,) + (1,) * (rank - 1)
        return (1,) * (rank - 1) + (n,)
    # 2-D against 3-D/4-D, 3-D against 4-D: the blob fills the outer axes
    return small + (1,) * (rank - len(small))


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]):
    """(a's shape, b's shape, output shape) at equal rank, or None when they do not fit."""
    if len(a) < len(b):
        a = _expand(a, b)
    elif len(b) < len(a):
        b = _expand(b, a)
    if any(x != y and x != 1 and y != 1 for x, y in zip(a, b, strict=True)):
        return None
    return a, b, tuple(max(x, y) for x, y in zip(a, b, strict=True))


class BinaryOp(Layer):
    PARAMS = (Param(0, "op_type", 0), Param(1, "with_scalar", 0), Param(2, "b", 0.0))
    op_type: int
    with_scalar: int
    b: float

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        if not (0 <= self.op_type <= 18):
            log.error("BinaryOp %r: unknown op_type %d", self.name, self.op_type)
            return -1
        # the scalar form takes one blob and may overwrite it; the two-blob form makes a new one
        self.one_blob_only = self.with_scalar != 0
        self.support_inplace = self.with_scalar != 0
        return 0

    def forward(self, bottom, top, opt) -> int:
        if self.with_scalar:
            x = bottom.tensor()
            top.create(*x.shape[::-1], elemsize=4, elempack=1, allocator=opt.blob_allocator)
            if top.empty():
                return -100
            _apply(self.op_type, x, np.float32(self.b), top.tensor())
            return 0
        if len(bottom) != 2:
            log.error("BinaryOp %r: needs two input blobs, got %d", self.name, len(bottom))
            return -1
        a = bottom[0].tensor()
        b = bottom[1].tensor()
        shapes = broadcast_shapes(a.shape, b.shape)
        if shapes is None:
            log.error("BinaryOp %r: cannot broadcast shapes %s and %s", self.name, a.shape, b.shape)
            return -1
        ashape, bshape, oshape = shapes
        out = top[0]
        out.create(*oshape[::-1], elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if out.empty():
            return -100
        if a.shape == b.shape and a.ndim >= 3 and bottom[0].cstep == bottom[1].cstep == out.cstep:
            # equal shapes (residual adds): one contiguous pass over the padded storage
            fa, fb, fo = padded_flat(bottom[0]), padded_flat(bottom[1]), padded_flat(out)
            if fa is not None and fb is not None and fo is not None:
                _apply(self.op_type, fa, fb, fo)
                return 0
        _apply(self.op_type, a.reshape(ashape), b.reshape(bshape), out.tensor())
        return 0

    def forward_inplace(self, bottom_top, opt) -> int:
        if not self.with_scalar:
            log.error("BinaryOp %r: only the scalar form works in place", self.name)
            return -1
        x = bottom_top.tensor()
        _apply(self.op_type, x, np.float32(self.b), x)
        return 0
