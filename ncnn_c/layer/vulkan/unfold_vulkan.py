"""Unfold (im2col) on the GPU: one gather dispatch (unfold.comp), padding virtual.

Pads (explicit with pad_value, SAME) and the window grid come from the CPU class's ``pads``
and ``output_shape`` (``_geometry.Window``). Blobs are elempack 1 (the net unpacks a packed
bottom); a copy, so fp16 storage is exact.
"""

from __future__ import annotations

import logging

from ..unfold import Unfold
from . import LOCAL_2D, VulkanLayer

log = logging.getLogger("ncnn_c")


class Unfold_vulkan(VulkanLayer, Unfold):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.pipeline_unfold = None

    def create_pipeline_vk(self, opt) -> int:
        specs = [
            *self._per_axis("kernel")[::-1],
            *self._per_axis("dilation")[::-1],
            *self._per_axis("stride")[::-1],
        ]
        self.pipeline_unfold = self.new_pipeline("unfold", opt, specs, LOCAL_2D)
        return 0 if self.pipeline_unfold else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if not self.accepts_3d(bottom):
            return -1
        size = (bottom.h, bottom.w)
        pads = self.pads(size)
        out = self.output_shape(size, pads)
        if out is None:
            return -1
        outh, outw = out
        rows = bottom.c * self.kernel_w * self.kernel_h
        top.create(outw * outh, rows, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator)
        if top.empty():
            return -100
        # the shader's push constant block, in order
        constants = [
            bottom.w,
            bottom.h,
            bottom.cstep,
            outw,
            outh,
            rows,
            pads[2],
            pads[0],
            float(self.pad_value),
        ]
        cmd.record_pipeline(self.pipeline_unfold, [bottom, top], constants, (outw * outh, rows, 1))
        return 0
