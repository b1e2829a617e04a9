"""Pooling on the GPU: windowed max/avg with every pad mode, adaptive, and global reduction.

Pad modes and avgpool_count_include_pad become host-side numbers (the window origin and
the region whose cells count towards an average), taken from the CPU layer's own pad
arithmetic, so the shader has no per-mode code and no bordered copy is made. Windowed
pooling computes a row tile of outputs per invocation (see pooling.comp).

Elempack 4 blobs use pooling_pack4.comp / pooling_global_pack4.comp (one packed output per
invocation) with the same specializations and push constants; those pipelines exist only
when use_packing_layout is on.

A 2-D blob pools as one channel, as ncnn's CPU layer does: the result is 3-D with one
channel (global: 1-D of one value; adaptive to the same size: the blob itself, still 2-D).
A packed 2-D blob holds four rows per element, which a window would mix, so it is unpacked
first by the shared layout conversion and pooled by the elempack 1 shaders.
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
        # a 2-D blob (by the shape hint) is pooled unpacked whatever its packing
        flat = getattr(self.bottom_shapes[0] if self.bottom_shapes else None, "dims", 0) == 2
        pack1 = flat or self.may_see_elempack(1, opt)
        self.pipeline_pooling = self.new_pipeline(shader, opt, specs, local, needed=pack1)
        self.pipeline_pooling_pack4 = None
        self.pipeline_packing = None
        if opt.use_packing_layout:
            pack4 = not flat and self.may_see_elempack(4, opt)
            self.pipeline_pooling_pack4 = self.new_pipeline(
                shader + "_pack4", opt, specs, local, needed=pack4
            )
            # unpacks a packed 2-D blob; the net's own layout conversion, so no extra build
            self.pipeline_packing = self.new_packing_pipeline(opt)
            if self.pipeline_pooling_pack4 is None or self.pipeline_packing is None:
                return -1
        return 0 if self.pipeline_pooling else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims not in (2, 3):
            log.error("Pooling %r: needs a 2-D or 3-D blob, got dims %d", self.name, bottom.dims)
            return -1
        if self.adaptive_pooling and self._adaptive_size(bottom.w, bottom.h) == (bottom.w, bottom.h):
            # ncnn passes the blob through (a 2-D one stays 2-D), as the CPU layer does
            top.share_from(bottom)
            return 0
        if bottom.dims == 2:
            # one channel: rows packed four to an element would be mixed by a window
            bottom = self.in_elempack(cmd, bottom, 1, opt)
            if isinstance(bottom, int):
                return bottom
        pack4 = bottom.elempack == 4
        if pack4:
            pipeline = self.pipeline_pooling_pack4
            if pipeline is None:
                log.error("Pooling %r: an elempack 4 blob with use_packing_layout off", self.name)
                return -1
        elif bottom.elempack != 1:
            log.error("Pooling %r: cannot take an elempack %d blob", self.name, bottom.elempack)
            return -1
        elif not self.accepts_vec4_channels(bottom):
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
            outw, outh = self._adaptive_size(w, h)
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

    def _adaptive_size(self, w: int, h: int) -> tuple[int, int]:
        """(outw, outh) of adaptive pooling; -233 keeps the input's extent."""
        return (w if self.out_w == -233 else self.out_w, h if self.out_h == -233 else self.out_h)

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
