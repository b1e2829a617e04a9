"""GridSample on the GPU: every sample_type (bilinear / trilinear, nearest, bicubic on 3-D
bottoms), padding_mode and align_corner, both grid layouts (plain and permute_fusion), one
dispatch (gridsample.comp) with one invocation per output point.

The grid layout only changes where a point's coordinates sit: the layer passes their
strides. Blobs are elempack 1 (the net unpacks packed ones); locations are fp32 whatever
the storage type (an fp16 grid blob holds them as the producer stored them).
"""

from __future__ import annotations

import logging

from ..gridsample import GridSample
from . import LOCAL_2D, VulkanLayer

log = logging.getLogger("ncnn_c")


class GridSample_vulkan(VulkanLayer, GridSample):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.pipelines: dict[int, object] = {}

    def create_pipeline_vk(self, opt) -> int:
        # the input rank is known only from the blobs: a shape hint names it, else the 3-D
        # form (ncnn's common one) is built and the 4-D one deferred to its first dispatch
        shape = self.bottom_shapes[0] if self.bottom_shapes else None
        dims = getattr(shape, "dims", 0) if shape is not None else 0
        for dims3 in (0, 1):
            if dims3 and self.sample_type == 3:
                continue
            specs = [self.sample_type, self.padding_mode, self.align_corner, dims3]
            needed = dims == (4 if dims3 else 3) if dims in (3, 4) else not dims3
            pipeline = self.new_pipeline("gridsample", opt, specs, LOCAL_2D, needed=needed)
            if pipeline is None:
                return -1
            self.pipelines[dims3] = pipeline
        return 0

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        if len(bottoms) != 2:
            log.error("GridSample %r: needs the input and the grid, got %d blobs", self.name, len(bottoms))
            return -1
        src, grid = bottoms
        if src.dims not in (3, 4) or src.elempack != 1 or grid.dims != src.dims or grid.elempack != 1:
            log.error(
                "GridSample %r: needs a 3-D or 4-D elempack 1 input and a grid of the same dims, "
                "got dims %d and %d",
                self.name,
                src.dims,
                grid.dims,
            )
            return -1
        dims3 = int(src.dims == 4)
        naxes = 2 + dims3
        if self.permute_fusion == 0:
            # numpy (outh, outw, 2) / (outd, outh, outw, 3): coordinates innermost
            coords = grid.w
            out = (grid.h, grid.c, 1) if not dims3 else (grid.h, grid.d, grid.c)
            strides = [1, grid.w, grid.cstep, 0] if not dims3 else [1, grid.w, grid.w * grid.h, grid.cstep]
        else:
            # numpy (2, outh, outw) / (3, outd, outh, outw): one plane per coordinate
            coords = grid.c
            out = (grid.w, grid.h, grid.d if dims3 else 1)
            strides = [grid.cstep, 1, grid.w, grid.w * grid.h]
        if coords != naxes:
            log.error(
                "GridSample %r: the grid holds %d coordinates per point, needs %d", self.name, coords, naxes
            )
            return -1
        if dims3 and self.sample_type == 3:
            log.error("GridSample %r: sample_type 3 (bicubic) needs a 3-D input", self.name)
            return -1
        outw, outh, outd = out
        top = tops[0]
        if dims3:
            top.create(
                outw, outh, outd, src.c, elemsize=src.elemsize, elempack=1, allocator=opt.blob_vkallocator
            )
        else:
            top.create(outw, outh, src.c, elemsize=src.elemsize, elempack=1, allocator=opt.blob_vkallocator)
        if top.empty():
            return -100
        d = src.d if dims3 else 1
        # the shader's push constant block, in order
        constants = [src.w, src.h, d, src.c, src.cstep, outw, outh, outd, top.cstep, *strides]
        cmd.record_pipeline(self.pipelines[dims3], [src, grid, top], constants, (outw, outh * outd, 1))
        return 0
