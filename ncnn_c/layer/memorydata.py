"""MemoryData: a constant blob stored in the model file, produced with no input blob.

The shape params ``w``, ``h``, ``d``, ``c`` (ids 0, 1, 11, 2) give the rank as ncnn reads them:
``d`` set makes a 4-D blob, else ``c`` a 3-D one, else ``h`` 2-D, else ``w`` 1-D; all zero is
one value, 0 (ncnn leaves that one uninitialised). ``load_type`` (21) is how the weights are
stored: 1 raw fp32 (the default), 0 with a storage flag (fp32, fp16 or int8-quantised).
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param, load_weight

log = logging.getLogger("ncnn_c")


class MemoryData(Layer):
    PARAMS = (
        Param(0, "w", 0),
        Param(1, "h", 0),
        Param(11, "d", 0),
        Param(2, "c", 0),
        Param(21, "load_type", 1),
    )
    w: int
    h: int
    d: int
    c: int
    load_type: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False
        self.data = np.zeros(1, np.float32)

    def check_params(self) -> int:
        if min(self.w, self.h, self.d, self.c) < 0:
            log.error(
                "MemoryData %r: negative shape w=%d h=%d d=%d c=%d", self.name, self.w, self.h, self.d, self.c
            )
            return -1
        return 0

    def blob_shape(self) -> tuple[int, ...]:
        """numpy shape of the stored blob, from the shape params as ncnn reads them."""
        w, h, d, c = self.w, self.h, self.d, self.c
        if d:
            return (c, d, h, w)
        if c:
            return (c, h, w)
        if h:
            return (h, w)
        if w:
            return (w,)
        return (1,)

    def load_model(self, mb) -> int:
        shape = self.blob_shape()
        if not (self.w or self.h or self.d or self.c):
            self.data = np.zeros(1, np.float32)
            return 0
        count = int(np.prod(shape))
        if count == 0:
            log.error("MemoryData %r: shape %s holds no values", self.name, shape)
            return -1
        m = load_weight(self, mb, "data", count, self.load_type)
        if m.empty():
            return -100
        flat = np.asarray(m.tensor(), dtype=np.float32).reshape(-1)
        if flat.size != count:
            log.error("MemoryData %r: got %d values for shape %s", self.name, flat.size, shape)
            return -1
        self.data = flat.reshape(shape).copy()
        return 0

    def forward(self, bottoms, tops, opt) -> int:
        top = tops[0]
        top.create(*self.data.shape[::-1], elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        # a fresh copy each time: a later in-place layer must not change the stored constant
        top.tensor()[...] = self.data
        return 0
