"""Cast on the GPU between fp32 (1) and fp16 (2), any elempack, through the shared layout
conversion (packing.comp). Other types (int8, bf16) have no GPU blob form here: such a
Cast declares itself CPU-only at load_param and the net moves its blobs to the host."""

from __future__ import annotations

from ..cast import AUTO, FP16, FP32, Cast
from . import VulkanLayer, is_fp16, record_convert


class Cast_vulkan(VulkanLayer, Cast):
    def __init__(self) -> None:
        super().__init__()
        self.support_packing = True
        self.support_fp16_storage = True
        self.support_bf16_storage = False

    def check_params(self) -> int:
        ret = super().check_params()
        gpu_types = (AUTO, FP32, FP16)
        self.support_vulkan = self.type_from in gpu_types and self.type_to in gpu_types
        if not self.support_vulkan:
            # the CPU Cast takes every blob form it is given
            self.support_bf16_storage = True
        return ret

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_packing = self.new_packing_pipeline(opt)
        return 0 if self.pipeline_packing else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if self.type_to == AUTO or is_fp16(bottom) == (self.type_to == FP16):
            top.share_from(bottom)
            return 0
        record_convert(cmd, self.pipeline_packing, bottom, top, bottom.elempack, self.type_to == FP16, opt)
        return 0 if not top.empty() else -100
