"""Input on the GPU: the uploaded blob is already the layer's output, nothing to record."""

from __future__ import annotations

from ..input import Input
from . import VulkanLayer


class Input_vulkan(VulkanLayer, Input):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        return 0
