"""Softmax along one axis (param 0, negative counts from the end), fp32, in place.

A 1-D blob is normalised whole whatever the axis says, as ncnn does.

Non-finite values follow ncnn's vector code: the running max starts at -FLT_MAX and skips a
NaN, and the exponent's argument is clamped from above with ``min_ps(x - max, 88.376..)``,
which gives the bound for a NaN. So a NaN (or an inf, as inf - inf) counts as exp(88.376) =
2.4e38: one takes the whole probability, two or more overflow the sum and give zeros (ncnn's
scalar tail, for the last elements of a line not a multiple of 4 long, gives NaN instead).
For finite inputs the clamp is a no-op.

Param 1 ``fixbug0``: early ncnn treated the axis of 3-D blobs wrongly; ncnn refuses to
load a non-zero axis unless the converter marked the param file as fixed (1=1), and so
do we, rather than reproduce the old wrong result.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")

FLT_MAX = np.float32(np.finfo(np.float32).max)
# the upper bound of ncnn's exp_ps argument (sse/avx/avx512_mathfun.h)
EXP_HI = np.float32(88.3762626647949)


class Softmax(Layer):
    PARAMS = (Param(0, "axis", 0), Param(1, "fixbug0", 0))
    axis: int
    fixbug0: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True

    def check_params(self) -> int:
        if self.fixbug0 == 0 and self.axis != 0:
            log.error(
                "Softmax %r: axis %d without fixbug0=1 is from a too old converter, regenerate the param",
                self.name,
                self.axis,
            )
            return -1
        return 0

    def forward_inplace(self, bottom_top, opt) -> int:
        x = bottom_top.tensor()
        dims = bottom_top.dims
        axis = 0 if dims == 1 else (self.axis + dims if self.axis < 0 else self.axis)
        if not 0 <= axis < dims:
            log.error("Softmax %r: axis %d out of range for a %d-D blob", self.name, self.axis, dims)
            return -1
        with np.errstate(over="ignore", invalid="ignore"):
            np.subtract(x, np.fmax.reduce(x, axis=axis, keepdims=True, initial=-FLT_MAX), out=x)
            np.fmin(x, EXP_HI, out=x)  # fmin takes the bound for a NaN, as min_ps does
            np.exp(x, out=x)
            np.divide(x, x.sum(axis=axis, keepdims=True), out=x)
        return 0
