"""Quantize on the GPU: ``float2int8(x * scale)`` per blob, row or channel, written widened by
value into the bottom's float storage (fp16 holds every int8 value exactly), every dims and
elempack; one scalar shader (quantize.comp; see _int8.py for the GPU form of int8 blobs)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .._int8 import count_fits
from ..quantize import Quantize
from . import VulkanLayer
from ._int8 import logical_rows, mark_int8, record_quantize, upload_vector

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class Quantize_vulkan(VulkanLayer, Quantize):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_quantize = None
        self.scale_data_gpu: VkMat | None = None

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_quantize = self.new_pipeline("quantize", opt, [])
        return 0 if self.pipeline_quantize else -1

    def upload_model(self, cmd, opt) -> int:
        if self.scale_data.size > 1:
            self.scale_data_gpu = upload_vector(cmd, self.scale_data, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.scale_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        rows = logical_rows(bottom)
        if not count_fits(self, "scale_data", self.scale_data.size, rows, bottom.dims):
            return -1
        top.create_like(bottom, opt.blob_vkallocator)
        if top.empty():
            return -100
        record_quantize(
            cmd, self.pipeline_quantize, bottom, top, self.scale_data_gpu, float(self.scale_data[0])
        )
        mark_int8(top)
        return 0
