"""Tile on the GPU: one tile.comp dispatch, each output element reading the input at its
position modulo the input's extents; both of ncnn's forms (axis + tiles, repeats) through the
CPU layer's repeat counts. Any elempack in, ncnn's elempack for the output shape out; packed
elements move whole when both blobs pack the same axis."""

from __future__ import annotations

from ..tile import Tile
from . import VulkanLayer
from ._remap import blob_desc, create_top, logical_extents, new_remap_pipelines, record_remap


class Tile_vulkan(VulkanLayer, Tile):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_tile = new_remap_pipelines(self, "tile", opt)
        return 0 if self.pipelines_tile else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        dims = bottom.dims
        counts = self._counts(dims)
        if counts is None:
            return -1
        outdims = max(dims, self.repeats.size)
        if counts == (1, 1, 1, 1) and outdims == dims:
            top.share_from(bottom)
            return 0
        w, h, d, c = logical_extents(bottom)
        rc, rd, rh, rw = counts
        out4 = (c * rc, d * rd, h * rh, w * rw)
        shape = {1: out4[3:], 2: out4[2:], 3: (out4[0], *out4[2:]), 4: out4}[outdims]
        ret = create_top(top, shape, bottom, opt)
        if ret:
            return ret
        whole = int(bottom.elempack == 4 and top.elempack == 4 and blob_desc(bottom)[4] == blob_desc(top)[4])
        extra = [whole, w, h, d, c]
        return record_remap(self, cmd, self.pipelines_tile, [bottom, top], bottom, top, extra)
