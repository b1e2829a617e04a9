"""AbsVal on the GPU, in place: one scalar shader for every storage type and elempack."""

from __future__ import annotations

from ..absval import AbsVal
from . import VulkanLayer, record_elementwise


class AbsVal_vulkan(VulkanLayer, AbsVal):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_absval = self.new_pipeline("absval", opt, [])
        return 0 if self.pipeline_absval else -1

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        record_elementwise(cmd, self.pipeline_absval, bottom_top)
        return 0
