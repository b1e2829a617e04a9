"""StatisticsPooling: per-channel mean over w*h*d, and with ``include_stddev`` (param 0) the
per-channel population standard deviation after it; a 1-D blob of c (or 2c) values.

A 1-D or 2-D blob is one channel. The deviation is sqrt(mean((x - mean)^2)) around the
float32 mean, as ncnn computes it.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class StatisticsPooling(Layer):
    PARAMS = (Param(0, "include_stddev", 0),)
    include_stddev: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def forward(self, bottom, top, opt) -> int:
        if not 1 <= bottom.dims <= 4 or bottom.elempack != 1 or bottom.elemsize != 4:
            log.error("StatisticsPooling %r: needs a 1-4 D fp32 blob, got dims %d", self.name, bottom.dims)
            return -1
        c = bottom.c
        x = bottom.tensor().reshape(c, -1)
        size = np.float32(x.shape[1])
        top.create(c * 2 if self.include_stddev else c, elemsize=4, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        mean = x.sum(axis=1, dtype=np.float32) / size
        out[:c] = mean
        if self.include_stddev:
            dev = x - mean[:, None]
            np.sqrt(np.einsum("cs,cs->c", dev, dev) / size, out=out[c:])
        return 0
