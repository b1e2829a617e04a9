"""ArgMax: the ``topk`` (param 1, default 1) largest values of the whole blob, largest first.

The top is ncnn's: a 2-D blob of one row of indexes, or with ``out_max_val`` (param 0) two
rows, the values then their indexes (as floats). Ties go to the larger index first (ncnn
sorts (value, index) pairs in descending order).

ncnn walks ``total()`` elements, which on a 3-D / 4-D blob whose channels are padded counts
the uninitialised padding too: there its indexes count padding slots and a padding value can
win. We rank the real elements only and index them in (c, d, h, w) order, which is ncnn's
result whenever its channels are unpadded (any 1-D / 2-D blob, w*h*d a multiple of 4).
ncnn builds ArgMax only on request (not in the PyPI package); tests use a numpy reference.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class ArgMax(Layer):
    PARAMS = (Param(0, "out_max_val", 0), Param(1, "topk", 1))
    out_max_val: int
    topk: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        if self.topk < 1:
            log.error("ArgMax %r: topk %d must be >= 1", self.name, self.topk)
            return -1
        return 0

    def forward(self, bottom, top, opt) -> int:
        if not 1 <= bottom.dims <= 4 or bottom.elempack != 1 or bottom.elemsize != 4:
            log.error("ArgMax %r: needs a 1-4 D fp32 blob, got dims %d", self.name, bottom.dims)
            return -1
        x = bottom.tensor().reshape(-1)
        k = self.topk
        if k > x.size:
            log.error("ArgMax %r: topk %d is more than the blob's %d values", self.name, k, x.size)
            return -1
        index = np.arange(x.size)
        # descending by value, ties by descending index (lexsort's last key is the primary one)
        order = np.lexsort((-index, -x))[:k]
        top.create(k, 2 if self.out_max_val else 1, elemsize=4, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        if self.out_max_val:
            out[0] = x[order]
        out[-1] = order
        return 0
