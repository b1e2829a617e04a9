"""Reduction on the GPU: every operation over any axes, with or without keepdims, in one
dispatch of reduction.comp (one invocation per output value, fp32 accumulation).

The reduced axes and the output shape come from the CPU layer (``reduced_axes``,
``output_shape``); the host turns them into per-slot sizes and strides. Blobs are elempack 1
(the net unpacks before this layer): a reduction reads across the packed axis as often as
along the others, and the result is small.
"""

from __future__ import annotations

import logging

from ..reduction import MEAN, Reduction
from . import VulkanLayer, numpy_shape

log = logging.getLogger("ncnn_c")


def _strides(shape: tuple[int, ...], cstep: int) -> list[int]:
    """Element steps along each numpy axis of an elempack 1 blob of ``shape``."""
    steps = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        steps[k] = steps[k + 1] * shape[k + 1]
    if len(shape) >= 3:
        steps[0] = cstep
    return steps


class Reduction_vulkan(VulkanLayer, Reduction):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False
        self.pipeline_reduction = None

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_reduction = self.new_pipeline("reduction", opt, [self.operation])
        return 0 if self.pipeline_reduction else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.elempack != 1:
            log.error("Reduction %r: needs an elempack 1 blob, got %d", self.name, bottom.elempack)
            return -1
        axes = self.reduced_axes(bottom.dims)
        if axes is None:
            return -1
        shape = numpy_shape(bottom)
        oshape = self.output_shape(shape, axes)
        top.create(*oshape[::-1], elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator)
        if top.empty():
            return -100

        pad = 4 - len(shape)
        sizes = [1] * pad + list(shape)
        in_steps = [0] * pad + _strides(shape, bottom.cstep)
        out_steps_axes = _strides(oshape, top.cstep)
        reduced = set(a + pad for a in axes)
        out_steps = [0, 0, 0, 0]
        # the kept axes land on the output's axes in order (keepdims: every axis stays)
        j = 0
        for slot in range(pad, 4):
            if self.keepdims:
                if slot not in reduced:
                    out_steps[slot] = out_steps_axes[slot - pad]
            elif slot not in reduced:
                out_steps[slot] = out_steps_axes[j]
                j += 1
        kept = [1 if s in reduced else n for s, n in enumerate(sizes)]
        red = [n if s in reduced else 1 for s, n in enumerate(sizes)]
        total = kept[0] * kept[1] * kept[2] * kept[3]
        coeff = float(self.coeff)
        if self.operation == MEAN:
            coeff /= red[0] * red[1] * red[2] * red[3]
        constants = [total, *kept[1:], *in_steps, *red, *out_steps, coeff]
        cmd.record_pipeline(self.pipeline_reduction, [bottom, top], constants, (total, 1, 1))
        return 0
