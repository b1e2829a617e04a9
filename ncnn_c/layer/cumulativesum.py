"""CumulativeSum: running sum along ``axis`` (param 0, negative from the end), in place, as
torch.cumsum. A 1-D blob ignores the axis.

The sum runs in float32 one element after another, as ncnn's reference loops do (numpy's
cumsum is sequential too). Across rows, depths and channels that is also what ncnn's x86
code computes, bit for bit; along a row its SIMD scan re-associates the additions, so there
the two differ by rounding.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class CumulativeSum(Layer):
    PARAMS = (Param(0, "axis", 0),)
    axis: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True

    def _axis(self, m) -> int | None:
        dims = m.dims
        if not 1 <= dims <= 4 or m.elempack != 1 or m.elemsize != 4:
            log.error("CumulativeSum %r: needs a 1-4 D fp32 blob, got dims %d", self.name, dims)
            return None
        axis = 0 if dims == 1 else self.axis + dims if self.axis < 0 else self.axis
        if not 0 <= axis < dims:
            log.error("CumulativeSum %r: axis %d out of range for a %d-D blob", self.name, self.axis, dims)
            return None
        return axis

    def forward(self, bottom, top, opt) -> int:
        axis = self._axis(bottom)
        if axis is None:
            return -1
        top.create_like(bottom, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        np.cumsum(bottom.tensor(), axis=axis, out=top.tensor())
        return 0

    def forward_inplace(self, bottom_top, opt) -> int:
        axis = self._axis(bottom_top)
        if axis is None:
            return -1
        t = bottom_top.tensor()
        np.cumsum(t, axis=axis, out=t)
        return 0
