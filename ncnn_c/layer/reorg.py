"""Reorg: space-to-depth by ``stride`` (YOLOv2's passthrough layer).

Output pixel (i, j) of the channel for input channel q and sub-position (sh, sw) is input
pixel (i*stride + sh, j*stride + sw). Mode 0 numbers those channels q-major
(q*s*s + sh*s + sw), mode 1 sub-position-major ((sh*s + sw)*channels + q). Rows and
columns past the last whole stride are dropped.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param

log = logging.getLogger("ncnn_c")


class Reorg(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    stride: int
    mode: int

    PARAMS = (Param(0, "stride", 1), Param(1, "mode", 0))

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        if self.stride < 1 or self.mode not in (0, 1):
            log.error("Reorg %r: stride %d must be >= 1, mode %d 0 or 1", self.name, self.stride, self.mode)
            return -1
        return 0

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        s = self.stride
        if bottom.dims not in (2, 3) or bottom.w < s or bottom.h < s:
            log.error(
                "Reorg %r: needs a 2-D or 3-D blob of at least %dx%d, got %s",
                self.name,
                s,
                s,
                bottom.tensor().shape,
            )
            return -1
        c = bottom.c
        outh, outw = bottom.h // s, bottom.w // s
        top.create(outw, outh, c * s * s, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        x = bottom.tensor().reshape(c, bottom.h, bottom.w)[:, : outh * s, : outw * s]
        # axes (q, i, sh, j, sw)
        x = x.reshape(c, outh, s, outw, s)
        if self.mode == 0:
            np.copyto(top.tensor().reshape(c, s, s, outh, outw), x.transpose(0, 2, 4, 1, 3))
        else:
            np.copyto(top.tensor().reshape(s, s, c, outh, outw), x.transpose(2, 4, 0, 1, 3))
        return 0
