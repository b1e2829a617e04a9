"""PixelShuffle on the GPU: one pixelshuffle.comp dispatch, each output element reading its
input channel and cell position (both channel orders); any elempack in, ncnn's elempack for
the output's channel count out."""

from __future__ import annotations

import logging

from ..pixelshuffle import PixelShuffle
from . import VulkanLayer
from ._remap import create_top, logical_shape, new_remap_pipelines, record_remap

log = logging.getLogger("ncnn_c")


class PixelShuffle_vulkan(VulkanLayer, PixelShuffle):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_pixelshuffle = new_remap_pipelines(self, "pixelshuffle", opt)
        return 0 if self.pipelines_pixelshuffle else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        r = self.upscale_factor
        if bottom.dims != 3:
            log.error("PixelShuffle %r: needs a 3-D blob, got dims %d", self.name, bottom.dims)
            return -1
        c, h, w = logical_shape(bottom)
        outc = c // (r * r)
        if outc == 0:
            log.error("PixelShuffle %r: %d channels, fewer than upscale_factor^2 = %d", self.name, c, r * r)
            return -1
        ret = create_top(top, (outc, h * r, w * r), bottom, opt)
        if ret:
            return ret
        extra = [0, r, self.mode, outc]
        return record_remap(self, cmd, self.pipelines_pixelshuffle, [bottom, top], bottom, top, extra)
