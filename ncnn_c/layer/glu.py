"""GLU: split the blob in two halves along ``axis`` (param 0, negative from the end) and
give a * sigmoid(b), a the first half, b the second.

A 1-D blob ignores the axis. An odd size leaves the last slice out (ncnn halves by integer
division). The sigmoid is ncnn's ``1 / (1 + exp(-b))``.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")

_ONE = np.float32(1.0)


class GLU(Layer):
    PARAMS = (Param(0, "axis", 0),)
    axis: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def forward(self, bottom, top, opt) -> int:
        dims = bottom.dims
        if not 1 <= dims <= 4 or bottom.elempack != 1 or bottom.elemsize != 4:
            log.error("GLU %r: needs a 1-4 D fp32 blob, got dims %d", self.name, dims)
            return -1
        axis = 0 if dims == 1 else self.axis + dims if self.axis < 0 else self.axis
        if not 0 <= axis < dims:
            log.error("GLU %r: axis %d out of range for a %d-D blob", self.name, self.axis, dims)
            return -1
        x = bottom.tensor()
        half = x.shape[axis] // 2
        if half == 0:
            log.error("GLU %r: axis %d has size %d, nothing to halve", self.name, self.axis, x.shape[axis])
            return -1
        a = np.take(x, range(half), axis=axis)
        b = np.take(x, range(half, 2 * half), axis=axis)
        shape = a.shape
        top.create(*shape[::-1], elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        gate = np.negative(b)
        np.exp(gate, out=gate)
        gate += _ONE
        np.divide(_ONE, gate, out=gate)
        np.multiply(a, gate, out=top.tensor())
        return 0
