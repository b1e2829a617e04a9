"""PixelShuffle: depth to space. Each group of r*r channels (r = ``upscale_factor``, param 0)
becomes one channel r times wider and higher.

``mode`` (param 1) is the channel order: 0 (PyTorch's pixel_shuffle) takes output channel p
from input channels p*r*r + sh*r + sw; 1 (ONNX DepthToSpace DCR) from (sh*r + sw)*outc + p,
where (sh, sw) is the offset inside each r x r output cell. Channels beyond outc*r*r (when r*r
does not divide them) are ignored, as in ncnn. 3-D blobs only.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class PixelShuffle(Layer):
    PARAMS = (Param(0, "upscale_factor", 1), Param(1, "mode", 0))
    upscale_factor: int
    mode: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        if self.upscale_factor < 1:
            log.error("PixelShuffle %r: upscale_factor %d must be >= 1", self.name, self.upscale_factor)
            return -1
        if self.mode not in (0, 1):
            log.error("PixelShuffle %r: unknown mode %d (0 or 1)", self.name, self.mode)
            return -1
        return 0

    def forward(self, bottom, top, opt) -> int:
        r = self.upscale_factor
        if bottom.dims != 3 or bottom.elempack != 1:
            log.error("PixelShuffle %r: needs a 3-D blob, got dims %d", self.name, bottom.dims)
            return -1
        outc = bottom.c // (r * r)
        if outc == 0:
            log.error(
                "PixelShuffle %r: %d channels, fewer than upscale_factor^2 = %d", self.name, bottom.c, r * r
            )
            return -1
        h, w = bottom.h, bottom.w
        x = bottom.tensor()[: outc * r * r]
        if self.mode == 0:
            cells = x.reshape(outc, r, r, h, w).transpose(0, 3, 1, 4, 2)  # (p, i, sh, j, sw)
        else:
            cells = x.reshape(r, r, outc, h, w).transpose(2, 3, 0, 4, 1)
        top.create(w * r, h * r, outc, elemsize=bottom.elemsize, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        np.copyto(top.tensor(), cells.reshape(outc, h * r, w * r))
        return 0
