"""Slice: cut one blob into consecutive parts along an axis, one part per top.

Part sizes come from ``slices`` (-233 means an equal share of what is left) or, when given,
from ``indices`` (split points, negative from the end; the last part takes the rest).
A 1-D blob is always cut along w, whatever ``axis`` says, as in ncnn.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param
from ._int8 import int8_or_fp32

log = logging.getLogger("ncnn_c")

EQUAL_SHARE = -233


class Slice(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    axis: int
    slices: np.ndarray
    indices: np.ndarray

    PARAMS = (
        Param(0, "slices", kind="ints"),
        Param(1, "axis", 0),
        Param(2, "indices", kind="ints"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def part_sizes(self, size: int, n: int) -> list[int] | None:
        """The size of each of the ``n`` parts of an axis of ``size``; None if they do not fit."""
        sizes = []
        q = 0
        if self.indices.size:
            if self.indices.size < n - 1:
                return None
            for i in range(n):
                if i == n - 1:
                    s = size - q
                else:
                    idx = int(self.indices[i])
                    s = (idx + size if idx < 0 else idx) - q
                sizes.append(s)
                q += s
        else:
            if self.slices.size < n:
                return None
            for i in range(n):
                s = int(self.slices[i])
                if s == EQUAL_SHARE:
                    s = (size - q) // (n - i)
                sizes.append(s)
                q += s
        if any(s <= 0 for s in sizes) or q > size:
            return None
        return sizes

    def forward(self, bottoms: list[Mat], tops: list[Mat], opt) -> int:
        bottom = bottoms[0]
        dims = bottom.dims
        axis = 0 if dims == 1 else self.axis + dims if self.axis < 0 else self.axis
        x = bottom.tensor()
        if not 0 <= axis < dims:
            log.error("Slice %r: axis %d out of range for a %d-D blob", self.name, self.axis, dims)
            return -1
        sizes = self.part_sizes(x.shape[axis], len(tops))
        if sizes is None:
            log.error(
                "Slice %r: slices %s / indices %s cannot cut %d into %d parts",
                self.name,
                self.slices.tolist(),
                self.indices.tolist(),
                x.shape[axis],
                len(tops),
            )
            return -1
        q = 0
        for top, s in zip(tops, sizes, strict=True):
            index = [slice(None)] * dims
            index[axis] = slice(q, q + s)
            part = x[tuple(index)]
            # an int8 blob (a Quantize / Requantize top) gives int8 parts, as ncnn's
            top.create(
                *part.shape[::-1], elemsize=int8_or_fp32(bottom), elempack=1, allocator=opt.blob_allocator
            )
            if top.empty():
                return -100
            np.copyto(top.tensor(), part)
            q += s
        return 0
