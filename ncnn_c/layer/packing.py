"""Packing: regroup a blob's outermost axis (w for 1-D, h for 2-D, c for 3-D/4-D) into
elements of ``out_elempack`` lanes, or back to single lanes.

A packed blob's outer extent counts packed elements, and lane k of packed element i is
logical index i * elempack + k. When out_elempack does not divide the logical extent the
blob passes through unchanged, unless ``use_padding`` is set: then the extent is rounded
up and the added lanes are zeros (ncnn leaves them uninitialised). The cast/storage type
params only concern the GPU variant; the element type is kept.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class Packing(Layer):
    PARAMS = (
        Param(0, "out_elempack", 1),
        Param(1, "use_padding", 0),
        Param(2, "cast_type_from", 0),
        Param(3, "cast_type_to", 0),
        Param(4, "storage_type_from", 0),
        Param(5, "storage_type_to", 0),
    )
    out_elempack: int
    use_padding: int
    cast_type_from: int
    cast_type_to: int
    storage_type_from: int
    storage_type_to: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        # packed and 16-bit blobs must reach this layer as they are
        self.support_packing = True
        self.support_fp16_storage = True
        self.support_bf16_storage = True

    def check_params(self) -> int:
        if self.out_elempack <= 0:
            log.error("Packing %r: out_elempack %d must be positive", self.name, self.out_elempack)
            return -1
        return 0

    def forward(self, bottom, top, opt) -> int:
        elempack = bottom.elempack
        p = self.out_elempack
        if elempack == p:
            top.share_from(bottom)
            return 0
        if bottom.dims not in (1, 2, 3, 4):
            log.error("Packing %r: cannot pack a %d-D blob", self.name, bottom.dims)
            return -1
        packed = {1: bottom.w, 2: bottom.h}.get(bottom.dims, bottom.c)
        outer = packed * elempack
        if outer % p != 0 and not self.use_padding:
            top.share_from(bottom)
            return 0

        arr = bottom.tensor()
        if elempack > 1:
            # lanes next to the outer axis, then merged into it
            arr = np.moveaxis(arr, -1, 1).reshape((outer,) + arr.shape[1:-1])
        outc = -(-outer // p)
        shape = {
            1: (outc,),
            2: (bottom.w, outc),
            3: (bottom.w, bottom.h, outc),
            4: (bottom.w, bottom.h, bottom.d, outc),
        }[bottom.dims]
        top.create(*shape, elemsize=bottom.elemsize // elempack * p, elempack=p, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        if p == 1:
            out[...] = arr
            return 0
        if outc * p != outer:
            arr = np.concatenate([arr, np.zeros((outc * p - outer,) + arr.shape[1:], arr.dtype)])
        out[...] = np.moveaxis(arr.reshape((outc, p) + arr.shape[1:]), 1, -1)
        return 0
