"""Eltwise on the GPU: one dispatch per input after the first, each folding one more blob
into the output (eltwise.comp), over the scalars of any packing.

Inputs of one shape but different packings (their producers differ) are first brought to
the first input's packing with the shared layout conversion.
"""

from __future__ import annotations

import logging

from ..eltwise import SUM, Eltwise
from . import VulkanLayer, is_fp16, numpy_shape, outer_extent, record_convert, shape4

log = logging.getLogger("ncnn_c")


def _logical_shape(m) -> tuple[int, ...]:
    shape = numpy_shape(m)
    return (outer_extent(m),) + shape[1:]


class Eltwise_vulkan(VulkanLayer, Eltwise):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_eltwise = None
        self.pipeline_packing = None

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_eltwise = self.new_pipeline("eltwise", opt, [self.op_type])
        self.pipeline_packing = self.new_packing_pipeline(opt)
        return 0 if self.pipeline_eltwise and self.pipeline_packing else -1

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        if len(bottoms) < 2:
            log.error("Eltwise %r: needs at least two input blobs, got %d", self.name, len(bottoms))
            return -1
        shapes = [_logical_shape(b) for b in bottoms]
        if any(s != shapes[0] for s in shapes):
            log.error("Eltwise %r: input shapes differ: %s", self.name, shapes)
            return -1
        weighted = self.op_type == SUM and self.coeffs.size > 0
        if weighted and self.coeffs.size < len(bottoms):
            log.error("Eltwise %r: %d coeffs for %d input blobs", self.name, self.coeffs.size, len(bottoms))
            return -1
        first = bottoms[0]
        xs = [first]
        for b in bottoms[1:]:
            if b.elempack != first.elempack:
                c = type(b)()
                record_convert(cmd, self.pipeline_packing, b, c, first.elempack, is_fp16(first), opt)
                b = c
            xs.append(b)
        top = tops[0]
        top.create(
            *numpy_shape(first)[::-1],
            elemsize=first.elemsize,
            elempack=first.elempack,
            allocator=opt.blob_vkallocator,
        )
        if top.empty():
            return -100
        coeffs = [float(v) for v in self.coeffs] if weighted else [1.0] * len(xs)
        w, h, d, c, cstep = shape4(first)
        n = w * h * d * first.elempack
        grid = (n, c, 1)
        cstep *= first.elempack
        cmd.record_pipeline(self.pipeline_eltwise, [xs[0], xs[1], top], [n, c, cstep, *coeffs[:2]], grid)
        for x, k in zip(xs[2:], coeffs[2 : len(xs)], strict=True):
            cmd.record_pipeline(self.pipeline_eltwise, [top, x, top], [n, c, cstep, 1.0, k], grid)
        return 0
