"""Concat: join blobs of one rank along one axis (param 0, negative from the end).

The axis counts in numpy order (0 is channels for 3-D and 4-D blobs, rows for 2-D ones);
1-D blobs are joined end to end whatever the axis says, as ncnn does. int8 blobs (Quantize,
Requantize tops) join into an int8 blob, as ncnn's; a mix of int8 and fp32 widens by value.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class Concat(Layer):
    PARAMS = (Param(0, "axis", 0),)
    axis: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def forward(self, bottoms, tops, opt) -> int:
        dims = bottoms[0].dims
        axis = 0 if dims == 1 else (self.axis + dims if self.axis < 0 else self.axis)
        parts = [b.tensor() for b in bottoms]
        if not 0 <= axis < dims or any(b.dims != dims for b in bottoms):
            log.error(
                "Concat %r: cannot join %s along axis %d", self.name, [p.shape for p in parts], self.axis
            )
            return -1
        shape = list(parts[0].shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        if any(
            p.shape[:axis] + p.shape[axis + 1 :] != parts[0].shape[:axis] + parts[0].shape[axis + 1 :]
            for p in parts
        ):
            log.error(
                "Concat %r: shapes %s differ off axis %d", self.name, [p.shape for p in parts], self.axis
            )
            return -1
        top = tops[0]
        elemsize = 1 if all(b.elemsize == 1 for b in bottoms) else 4
        # Mat.create takes w, h[, d], c: the numpy shape reversed
        top.create(*shape[::-1], elemsize=elemsize, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        # writing into the top's view directly avoids np.concatenate's extra copy
        np.concatenate(parts, axis=axis, out=top.tensor())
        return 0
