"""Fold (col2im) on the GPU: one gather dispatch (fold.comp), each output cell summing the
window taps that cover it, so overlapping windows need no atomics.

The window grid is ``_geometry.output_shape`` of the padded output size, as the CPU class
computes it; the bottom's columns must match it. Blobs are elempack 1 (the net unpacks a
packed bottom); the sums are fp32 whatever the storage type.
"""

from __future__ import annotations

import logging

from .._geometry import output_shape, show
from ..fold import Fold
from . import LOCAL_2D, VulkanLayer

log = logging.getLogger("ncnn_c")


class Fold_vulkan(VulkanLayer, Fold):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.pipeline_fold = None

    def create_pipeline_vk(self, opt) -> int:
        specs = [
            *self._per_axis("kernel")[::-1],
            *self._per_axis("dilation")[::-1],
            *self._per_axis("stride")[::-1],
        ]
        self.pipeline_fold = self.new_pipeline("fold", opt, specs, LOCAL_2D)
        return 0 if self.pipeline_fold else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims != 2 or bottom.elempack != 1:
            log.error(
                "%s %r: needs a 2-D elempack 1 blob, got dims %d elempack %d",
                self.type,
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        kernel = self._per_axis("kernel")
        maxk = kernel[0] * kernel[1]
        pads = self.explicit_pads()
        size = self._per_axis("output", 0)
        windows = output_shape(size, self.extents(), self._per_axis("stride"), pads)
        if bottom.h % maxk or min(windows) <= 0 or windows[0] * windows[1] != bottom.w:
            log.error(
                "%s %r: input %dx%d is not %d kernel taps x %s windows of a %s output",
                self.type,
                self.name,
                bottom.w,
                bottom.h,
                maxk,
                show(windows),
                show(size),
            )
            return -1
        outh, outw = size
        channels = bottom.h // maxk
        top.create(outw, outh, channels, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator)
        if top.empty():
            return -100
        # the shader's push constant block, in order
        constants = [bottom.w, windows[1], windows[0], outw, outh, channels, top.cstep, pads[2], pads[0]]
        cmd.record_pipeline(self.pipeline_fold, [bottom, top], constants, (outw, outh, channels))
        return 0
