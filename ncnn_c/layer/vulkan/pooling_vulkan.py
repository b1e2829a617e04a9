"""Pooling on the GPU: windowed max/avg with every pad mode, adaptive, and global reduction.

Pad modes and avgpool_count_include_pad become host-side numbers (the window origin and
the region whose cells count towards an average), taken from the CPU layer's own pad
arithmetic, so the shader has no per-mode code and no bordered copy is made. Windowed
pooling computes a row tile of outputs per invocation (see pooling.comp).

Elempack 4 blobs use pooling_pack4.comp / pooling_global_pack4.comp (one packed output per
invocation) with the same specializations and push constants; those pipelines exist only
when use_packing_layout is on.
"""

from __future__ import annotations

import logging

from ..pooling import Pooling
from . import LOCAL_1D, LOCAL_2D, VulkanLayer

log = logging.getLogger("ncnn_c")

# outputs per invocation of windowed pooling: TILE_W in pooling.comp
_TILE_W = 8


class Pooling_vulkan(VulkanLayer, Pooling):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        if self.global_pooling:
            # one invocation per channel
            shader, specs, local = "pooling_global", [self.pooling_type], LOCAL_1D
        elif self.adaptive_pooling:
            # windows come from the sizes, so kernel and stride are normalised away
            shader, specs, local = "pooling", [self.pooling_type, 1, 1, 1, 1, 1], LOCAL_2D
        else:
            specs = [self.pooling_type, self.kernel_w, self.kernel_h, self.stride_w, self.stride_h, 0]
            shader, local = "pooling", LOCAL_2D
        pack1 = self.may_see_elempack(1, opt)
        self.pipeline_pooling = self.new_pipeline(shader, opt, specs, local, needed=pack1)
        self.pipeline_pooling_pack4 = None
        if opt.use_packing_layout:
            pack4 = self.may_see_elempack(4, opt)
            self.pipeline_pooling_pack4 = self.new_pipeline(
                shader + "_pack4", opt, specs, local, needed=pack4
            )
            if self.pipeline_pooling_pack4 is None:
                return -1
        return 0 if self.pipeline_pooling else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        pack4 = bottom.elempack == 4
        if pack4 and bottom.dims == 3:
            pipeline = self.pipeline_pooling_pack4
            if pipeline is None:
                log.error("Pooling %r: an elempack 4 blob with use_packing_layout off", self.name)
                return -1
        elif not self.accepts_3d(bottom) or not self.accepts_vec4_channels(bottom):
            return -1
        else:
            pipeline = self.pipeline_pooling
        w, h, c, cstep = bottom.w, bottom.h, bottom.c, bottom.cstep
        allocator = opt.blob_vkallocator
        elempack = bottom.elempack

        if self.global_pooling:
            top.create(c, elemsize=bottom.elemsize, elempack=elempack, allocator=allocator)
            if top.empty():
                return -100
            cmd.record_pipeline(pipeline, [bottom, top], [w * h, c, cstep], (c, 1, 1))
            return 0

        if self.adaptive_pooling:
            outw = w if self.out_w == -233 else self.out_w
            outh = h if self.out_h == -233 else self.out_h
            t = l = 0
            region = (0, w, 0, h)
        else:
            t, b, l, r = self.pads((h, w))
            out = self.output_shape((h, w), (t, b, l, r))
            if out is None:
                return -1
            outh, outw = out
            region = self._count_region(h, w, t, b, l, r)

        top.create(outw, outh, c, elemsize=bottom.elemsize, elempack=elempack, allocator=allocator)
        if top.empty():
            return -100
        constants = [w, h, c, cstep, outw, outh, top.cstep, l, t, *region]
        # windowed elempack-1 pooling computes _TILE_W outputs of a row per invocation
        grid_w = outw if self.adaptive_pooling or pack4 else -(-outw // _TILE_W)
        cmd.record_pipeline(pipeline, [bottom, top], constants, (grid_w, outh, c))
        return 0

    def _count_region(self, h, w, t, b, l, r) -> tuple[int, int, int, int]:
        """(x0, x1, y0, y1) in input coordinates of the cells an average sums and divides by.

        With count_include_pad that is the whole padded input (every window fits in it,
        so the divisor is the kernel area). Without, it is the CPU layer's rule: the input
        plus the layer's own pad params, without pad_mode 0's extra tail.
        """
        if self.avgpool_count_include_pad:
            return -l, w + r, -t, h + b
        tail_h = b - self.pad_bottom if self.pad_mode == 0 else 0
        tail_w = r - self.pad_right if self.pad_mode == 0 else 0
        return (
            self.pad_left - l,
            w + r - self.pad_right - tail_w,
            self.pad_top - t,
            h + b - self.pad_bottom - tail_h,
        )
