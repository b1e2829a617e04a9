"""MemoryData on the GPU: the constant is uploaded once (upload_model) and already brought to
the form a forward hands out (fp16 when fp16 storage is on, packed when packing is on and
its outer axis divides by 4); each forward then makes one GPU copy of it, so an in-place
consumer can never change the stored constant.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..memorydata import MemoryData
from . import VulkanLayer, is_fp16, preferred_elempack, record_convert

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class MemoryData_vulkan(VulkanLayer, MemoryData):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_packing = None
        self.data_gpu: VkMat | None = None

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_packing = self.new_packing_pipeline(opt)
        return 0 if self.pipeline_packing else -1

    def _form(self, m, opt) -> tuple[int, bool]:
        return preferred_elempack(m, opt), self.storage_fp16(opt)

    def upload_model(self, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat
        from ...mat import Mat

        raw = VkMat()
        cmd.record_upload(Mat.from_tensor(self.data), raw, opt)
        if raw.empty():
            return -100
        elempack, fp16 = self._form(raw, opt)
        if elempack == 1 and not fp16:
            self.data_gpu = raw
            return 0
        self.data_gpu = VkMat()
        record_convert(cmd, self.pipeline_packing, raw, self.data_gpu, elempack, fp16, opt)
        return 0 if not self.data_gpu.empty() else -100

    def release_gpu_data(self) -> None:
        self.data_gpu = None

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        data = self.data_gpu
        if data is None:
            log.error("MemoryData %r: the constant was not uploaded", self.name)
            return -1
        top = tops[0]
        elempack, fp16 = self._form(data, opt)
        if data.elempack == elempack and is_fp16(data) == fp16:
            cmd.record_clone(data, top, opt)
        else:
            # this forward's options ask for another form than the uploaded one
            record_convert(cmd, self.pipeline_packing, data, top, elempack, fp16, opt)
        return 0 if not top.empty() else -100
