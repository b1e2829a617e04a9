"""Packing on the GPU: the shared layout conversion (packing.comp) to out_elempack, keeping
the storage type; the blob passes unchanged when out_elempack does not divide its outer
axis and use_padding is off, as on the CPU."""

from __future__ import annotations

from ..packing import Packing
from . import VulkanLayer, is_fp16, outer_extent, record_convert


class Packing_vulkan(VulkanLayer, Packing):
    def __init__(self) -> None:
        super().__init__()
        self.support_packing = True
        self.support_fp16_storage = True
        self.support_bf16_storage = False

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_packing = self.new_packing_pipeline(opt)
        return 0 if self.pipeline_packing else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        p = self.out_elempack
        if bottom.elempack == p or (outer_extent(bottom) % p != 0 and not self.use_padding):
            top.share_from(bottom)
            return 0
        record_convert(cmd, self.pipeline_packing, bottom, top, p, is_fp16(bottom), opt)
        return 0 if not top.empty() else -100
