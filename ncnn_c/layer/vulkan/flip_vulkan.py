"""Flip on the GPU: one flip.comp dispatch mirroring the flipped coordinates; any elempack in,
ncnn's elempack for the (unchanged) shape out. A packed element moves whole when the packed
axis is not flipped."""

from __future__ import annotations

import logging

from ..flip import Flip
from . import VulkanLayer
from ._remap import (
    COORD,
    blob_desc,
    create_top,
    logical_extents,
    logical_shape,
    new_remap_pipelines,
    record_remap,
)

log = logging.getLogger("ncnn_c")


class Flip_vulkan(VulkanLayer, Flip):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_flip = new_remap_pipelines(self, "flip", opt)
        return 0 if self.pipelines_flip else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if self.axes.size == 0:
            top.share_from(bottom)
            return 0
        dims = bottom.dims
        axes = self.axes.tolist()
        for a in axes:
            if not -dims <= a < dims:
                log.error("Flip %r: axis %d out of range for a %d-D blob", self.name, a, dims)
                return -1
        flip = [0, 0, 0, 0]
        # a 1-D blob is reversed whatever the list holds, as ncnn
        for a in [0] if dims == 1 else axes:
            flip[COORD[dims][a % dims]] = 1
        ret = create_top(top, logical_shape(bottom), bottom, opt)
        if ret:
            return ret
        whole = int(bottom.elempack == 4 and top.elempack == 4 and not flip[blob_desc(bottom)[4]])
        extra = [whole, *flip, *logical_extents(bottom)]
        return record_remap(self, cmd, self.pipelines_flip, [bottom, top], bottom, top, extra)
