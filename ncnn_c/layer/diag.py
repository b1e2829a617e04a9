"""Diag: torch.diag. A 1-D blob becomes the square 2-D blob with it on diagonal ``diagonal``
(param 0; above the main one when positive, below when negative) and zeros elsewhere; a 2-D
blob gives its diagonal number ``diagonal`` as a 1-D blob.

A diagonal that misses the matrix gives an empty blob, as ncnn does. Other ranks are refused
(ncnn leaves the top unwritten).
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class Diag(Layer):
    PARAMS = (Param(0, "diagonal", 0),)
    diagonal: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def forward(self, bottom, top, opt) -> int:
        if bottom.dims not in (1, 2) or bottom.elempack != 1:
            log.error("Diag %r: needs a 1-D or 2-D blob, got dims %d", self.name, bottom.dims)
            return -1
        x = bottom.tensor()
        k = self.diagonal
        if bottom.dims == 1:
            n = bottom.w + abs(k)
            top.create(n, n, elemsize=bottom.elemsize, allocator=opt.blob_allocator)
            if top.empty():
                return -100
            out = top.tensor()
            out[...] = 0
            rows = np.arange(bottom.w)
            out[rows + max(-k, 0), rows + max(k, 0)] = x
            return 0
        d = np.diagonal(x, offset=k)
        if d.size == 0:
            top.release()
            return 0
        top.create(d.size, elemsize=bottom.elemsize, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        top.tensor()[...] = d
        return 0
