"""DeepCopy on the GPU: the top is a device-side copy of the bottom (a buffer copy, any
storage type and elempack), never an alias as Split's tops are."""

from __future__ import annotations

from ..deepcopy import DeepCopy
from . import VulkanLayer


class DeepCopy_vulkan(VulkanLayer, DeepCopy):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        cmd.record_clone(bottom, top, opt)
        return -100 if top.empty() else 0
