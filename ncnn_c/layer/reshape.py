"""Reshape: the same elements in a new shape of 1 to 4 dims (params w, h, d, c).

A param left at -233 drops that dim (and, as in ncnn, every dim after it in the order w, h,
c, d); 0 copies the input's size of that named dim; one -1 takes whatever is left. Also home
of ``share_reshaped``, the helper Flatten, Squeeze and ExpandDims use to relabel a blob.
"""

from __future__ import annotations

import logging

from ..mat import Mat
from . import Layer, Param

log = logging.getLogger("ncnn_c")

UNSET = -233


def share_reshaped(layer: Layer, bottom: Mat, top: Mat, shape: tuple[int, ...], opt) -> int:
    """Make ``top`` hold ``bottom``'s elements in numpy ``shape``.

    Mat.reshape shares the storage when neither side has channel padding, else copies once.
    """
    new = bottom.reshape(*shape[::-1], allocator=opt.blob_allocator)
    if new.dims == 0:
        log.error("%s %r: cannot reshape %s to %s", layer.type, layer.name, bottom.tensor().shape, shape)
        return -1
    if new.empty():
        return -100
    top.share_from(new)
    return 0


def numpy_shape(m: Mat) -> tuple[int, ...]:
    """The numpy shape (c, d, h, w) of a Mat, with as many axes as it has dims."""
    return ((m.w,), (m.h, m.w), (m.c, m.h, m.w), (m.c, m.d, m.h, m.w))[m.dims - 1]


class Reshape(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    w: int
    h: int
    d: int
    c: int
    permute: int

    PARAMS = (
        Param(0, "w", UNSET),
        Param(1, "h", UNSET),
        Param(11, "d", UNSET),
        Param(2, "c", UNSET),
        # ncnn dropped the permute flag in 2025 (its Reshape ignores param 3 since)
        Param(3, "permute", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def out_rank(self) -> int:
        """How many dims the output has: the first unset param in w, h, c, d order cuts it."""
        if self.w == UNSET:
            return 0
        if self.h == UNSET:
            return 1
        if self.c == UNSET:
            return 2
        if self.d == UNSET:
            return 3
        return 4

    def check_params(self) -> int:
        rank = self.out_rank()
        if rank == 0:
            log.error("Reshape %r: w (param 0) is unset, no output shape", self.name)
            return -1
        sizes = (self.w, self.h, self.c, self.d)[:rank]
        if any(s < -1 for s in sizes) or sum(s == -1 for s in sizes) > 1:
            log.error(
                "Reshape %r: bad sizes w h c d = %s (at most one -1, no other negative)", self.name, sizes
            )
            return -1
        if self.permute:
            log.warning("Reshape %r: permute=1 is ignored, as in current ncnn", self.name)
        return 0

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        rank = self.out_rank()
        total = bottom.w * bottom.h * bottom.d * bottom.c
        # 0 means "the input's size of this named dim"
        given = {"w": bottom.w, "h": bottom.h, "d": bottom.d, "c": bottom.c}
        names = ("w", "h", "d", "c") if rank == 4 else ("w", "h", "c")[:rank]
        sizes = {n: given[n] if getattr(self, n) == 0 else getattr(self, n) for n in names}
        known = 1
        for s in sizes.values():
            if s != -1:
                known *= s
        for n, s in sizes.items():
            if s == -1:
                sizes[n] = total // known if known > 0 else 0
        shape = tuple(sizes[n] for n in reversed(names))
        if any(s <= 0 for s in shape) or known <= 0:
            log.error("Reshape %r: cannot reshape %s to %s", self.name, numpy_shape(bottom), shape)
            return -1
        return share_reshaped(self, bottom, top, shape, opt)
