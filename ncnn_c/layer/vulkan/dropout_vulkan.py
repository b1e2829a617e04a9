"""Dropout on the GPU: an in-place multiply by scale; scale 1 records nothing at all."""

from __future__ import annotations

from ..dropout import Dropout
from . import VulkanLayer, record_elementwise


class Dropout_vulkan(VulkanLayer, Dropout):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_dropout = None
        if self.scale == 1.0:
            return 0
        self.pipeline_dropout = self.new_pipeline("dropout", opt, [float(self.scale)])
        return 0 if self.pipeline_dropout else -1

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        if self.pipeline_dropout is not None:
            record_elementwise(cmd, self.pipeline_dropout, bottom_top)
        return 0
