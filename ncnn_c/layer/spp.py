"""SPP: spatial pyramid pooling. Level p (0 .. ``pyramid_height`` - 1, param 1) pools every
channel into a 2^p x 2^p grid with ``pooling_type`` (param 0: 0 max, 1 average).

Per level and axis, as ncnn: kernel = stride = ceil(size / bins), the shortfall
kernel*bins - size split as zero padding (ceil(shortfall / 2) on each side, the far side's
excess unused). Zeros take part: a max is at least 0 where a window holds padding, an
average divides by the whole kernel area.

The output is the 1-D blob of every bin, level after level, channel after channel, rows
then columns (c * (4^H - 1) / 3 values). ncnn allocates a (bins, 1, 2) blob here and writes
those values on past its end for more than one channel (heap corruption), and builds SPP
only on request (not in the PyPI package): tests use a numpy reference. 1-D blobs are one
row, 2-D blobs one channel; 4-D blobs are refused.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")

MAX, AVE = 0, 1
# 4^H bins per channel must stay an int32 in ncnn, and a sane allocation here
MAX_PYRAMID_HEIGHT = 12


def level_geometry(size: int, bins: int) -> tuple[int, int]:
    """(kernel, pad) along one axis of an SPP level, as ncnn computes them."""
    kernel = math.ceil(size / bins)
    return kernel, (kernel * bins - size + 1) // 2


class SPP(Layer):
    PARAMS = (Param(0, "pooling_type", MAX), Param(1, "pyramid_height", 1))
    pooling_type: int
    pyramid_height: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        if self.pooling_type not in (MAX, AVE):
            log.error("SPP %r: unknown pooling_type %d (0 max, 1 average)", self.name, self.pooling_type)
            return -1
        if not 1 <= self.pyramid_height <= MAX_PYRAMID_HEIGHT:
            log.error(
                "SPP %r: pyramid_height %d must be 1..%d", self.name, self.pyramid_height, MAX_PYRAMID_HEIGHT
            )
            return -1
        return 0

    def forward(self, bottom, top, opt) -> int:
        if not 1 <= bottom.dims <= 3 or bottom.elempack != 1 or bottom.elemsize != 4:
            log.error("SPP %r: needs a 1-3 D fp32 blob, got dims %d", self.name, bottom.dims)
            return -1
        c, h, w = bottom.c, bottom.h, bottom.w
        x = bottom.tensor().reshape(c, h, w)
        per_channel = ((1 << (2 * self.pyramid_height)) - 1) // 3
        top.create(c * per_channel, elemsize=4, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        start = 0
        for p in range(self.pyramid_height):
            bins = 1 << p
            (kh, ph), (kw, pw) = level_geometry(h, bins), level_geometry(w, bins)
            padded = np.pad(x, ((0, 0), (ph, ph), (pw, pw)))
            windows = padded[:, : kh * bins, : kw * bins].reshape(c, bins, kh, bins, kw)
            if self.pooling_type == MAX:
                pooled = windows.max(axis=(2, 4))
            else:
                pooled = windows.sum(axis=(2, 4), dtype=np.float32) / np.float32(kh * kw)
            out[start : start + c * bins * bins] = pooled.reshape(-1)
            start += c * bins * bins
        return 0
