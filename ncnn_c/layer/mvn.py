"""MVN: mean-variance normalisation, per channel or over the whole blob (Caffe's MVN).

y = x - mean, then with ``normalize_variance`` (param 0) divided by sqrt(mean((x-mean)^2))
+ eps (param 2, default 1e-4, added after the root); the means are per channel, or over
every channel with ``across_channels`` (param 1). As in ncnn the whole-blob mean is the sum
of the per-channel sums over c*w*h*d, and the result is a 3-D blob even for a 1-D or 2-D
input (w, h, 1), a 4-D one for a 4-D input.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class MVN(Layer):
    PARAMS = (Param(0, "normalize_variance", 0), Param(1, "across_channels", 0), Param(2, "eps", 0.0001))
    normalize_variance: int
    across_channels: int
    eps: float

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def forward(self, bottom, top, opt) -> int:
        if not 1 <= bottom.dims <= 4 or bottom.elempack != 1 or bottom.elemsize != 4:
            log.error("MVN %r: needs a 1-4 D fp32 blob, got dims %d", self.name, bottom.dims)
            return -1
        c, d, h, w = bottom.c, bottom.d, bottom.h, bottom.w
        if bottom.dims == 4:
            top.create(w, h, d, c, elemsize=4, allocator=opt.blob_allocator)
        else:
            top.create(w, h, c, elemsize=4, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        x = bottom.tensor().reshape(c, -1)
        size = x.shape[1]
        out = top.tensor().reshape(c, -1)
        sums = x.sum(axis=1, dtype=np.float32)
        if self.across_channels:
            mean = sums.sum(dtype=np.float32) / np.float32(c * size)
        else:
            mean = (sums / np.float32(size))[:, None]
        np.subtract(x, mean, out=out)
        if self.normalize_variance:
            sqsums = np.einsum("cs,cs->c", out, out)
            if self.across_channels:
                sqmean = sqsums.sum(dtype=np.float32) / np.float32(c * size)
            else:
                sqmean = (sqsums / np.float32(size))[:, None]
            inv = np.float32(1.0) / (np.sqrt(sqmean) + np.float32(self.eps))
            out *= inv
        return 0
