"""RotaryEmbed (fp32): rotary position embedding from cos / sin caches, as ncnn's.

Inputs: x (num_heads, seqlen, embed_dim) (a 2-D blob is one head), then cos and sin caches of
at least (seqlen, embed_dim / 2): row t holds position t's values, one per pair of x. Each pair
(x0, x1) becomes (x0 cos - x1 sin, x0 sin + x1 cos). The pairs are the two halves of a row
(element j with j + embed_dim / 2), or with ``interleaved`` neighbouring elements (2j, 2j + 1).
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class RotaryEmbed(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (Param(0, "interleaved", 0),)
    interleaved: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def forward(self, bottoms, tops, opt) -> int:
        if len(bottoms) != 3 or not tops:
            log.error("RotaryEmbed %r: needs x, cos and sin inputs, got %d", self.name, len(bottoms))
            return -1
        x_mat, cos_mat, sin_mat = bottoms
        if x_mat.dims not in (2, 3) or x_mat.elempack != 1 or x_mat.w % 2:
            log.error(
                "RotaryEmbed %r: x must be a (heads, seqlen, embed_dim) fp32 blob with an even embed_dim, "
                "got dims %d shape %s",
                self.name,
                x_mat.dims,
                x_mat.tensor().shape,
            )
            return -1
        x = x_mat.tensor()
        seqlen, half = x.shape[-2], x.shape[-1] // 2
        caches = []
        for what, m in (("cos", cos_mat), ("sin", sin_mat)):
            if m.dims != 2 or m.elempack != 1 or m.h < seqlen or m.w < half:
                log.error(
                    "RotaryEmbed %r: the %s cache must be a 2-D blob of at least (%d, %d), got dims %d shape %s",
                    self.name,
                    what,
                    seqlen,
                    half,
                    m.dims,
                    m.tensor().shape,
                )
                return -1
            caches.append(m.tensor()[:seqlen, :half])
        cos, sin = caches

        top = tops[0]
        top.create_like(x_mat, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        if self.interleaved:
            x0, x1 = x[..., 0::2], x[..., 1::2]
            o0, o1 = out[..., 0::2], out[..., 1::2]
        else:
            x0, x1 = x[..., :half], x[..., half:]
            o0, o1 = out[..., :half], out[..., half:]
        np.subtract(x0 * cos, x1 * sin, out=o0)
        np.add(x0 * sin, x1 * cos, out=o1)
        return 0
