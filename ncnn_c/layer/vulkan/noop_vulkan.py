"""Noop on the GPU: the blob passes through untouched, in any storage type and packing."""

from __future__ import annotations

from ..noop import Noop
from . import VulkanLayer


class Noop_vulkan(VulkanLayer, Noop):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        return 0
