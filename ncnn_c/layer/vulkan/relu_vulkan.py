"""ReLU / leaky ReLU on the GPU, in place; the slope is baked in as a specialization constant."""

from __future__ import annotations

from ..relu import ReLU
from . import VulkanLayer, record_elementwise


class ReLU_vulkan(VulkanLayer, ReLU):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_relu = self.new_pipeline("relu", opt, [float(self.slope)])
        return 0 if self.pipeline_relu else -1

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        record_elementwise(cmd, self.pipeline_relu, bottom_top)
        return 0
