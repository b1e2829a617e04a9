"""Reorg on the GPU: one reorg.comp dispatch moving each stride x stride cell of a channel
into stride * stride channels (mode 0 q-major, mode 1 sub-position-major); any elempack in,
ncnn's elempack for the output's channel count out."""

from __future__ import annotations

import logging

from ..reorg import Reorg
from . import VulkanLayer
from ._remap import create_top, logical_shape, new_remap_pipelines, record_remap

log = logging.getLogger("ncnn_c")


class Reorg_vulkan(VulkanLayer, Reorg):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_reorg = new_remap_pipelines(self, "reorg", opt)
        return 0 if self.pipelines_reorg else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        s = self.stride
        shape = logical_shape(bottom)
        if bottom.dims not in (2, 3) or shape[-1] < s or shape[-2] < s:
            log.error("Reorg %r: needs a 2-D or 3-D blob of at least %dx%d, got %s", self.name, s, s, shape)
            return -1
        c = shape[0] if bottom.dims == 3 else 1
        ret = create_top(top, (c * s * s, shape[-2] // s, shape[-1] // s), bottom, opt)
        if ret:
            return ret
        constants = [s, self.mode, c]
        return record_remap(self, cmd, self.pipelines_reorg, [bottom, top], bottom, top, constants)
