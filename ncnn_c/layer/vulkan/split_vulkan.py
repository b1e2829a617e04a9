"""Split on the GPU: every top refers to the bottom's device buffer, no copy is recorded."""

from __future__ import annotations

from ..split import Split
from . import VulkanLayer


class Split_vulkan(VulkanLayer, Split):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        # like the CPU Split: the net clones a shared blob before an in-place consumer writes it
        for t in tops:
            t.share_from(bottoms[0])
        return 0
