"""CumulativeSum on the GPU, in place: one cumulativesum.comp dispatch, an invocation per line
along the axis summing in fp32 one element after another (every rank and axis; elempack 1 or
4, the blob read as scalars)."""

from __future__ import annotations

import logging

from ..cumulativesum import CumulativeSum
from . import LOCAL_2D, VulkanLayer
from ._remap import COORD, blob_desc, logical_extents

log = logging.getLogger("ncnn_c")


class CumulativeSum_vulkan(VulkanLayer, CumulativeSum):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipelines_cumsum: dict[int, object] = {}

    def create_pipeline_vk(self, opt) -> int:
        packs = (1, 4) if opt.use_packing_layout else (1,)
        for pack in packs:
            pipeline = self.new_pipeline(
                "cumulativesum", opt, [pack], LOCAL_2D, needed=self.may_see_elempack(pack, opt)
            )
            if pipeline is None:
                return -1
            self.pipelines_cumsum[pack] = pipeline
        return 0

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        dims = bottom_top.dims
        axis = 0 if dims == 1 else self.axis + dims if self.axis < 0 else self.axis
        if not 0 <= axis < dims:
            log.error("CumulativeSum %r: axis %d out of range for a %d-D blob", self.name, self.axis, dims)
            return -1
        pipeline = self.pipelines_cumsum.get(bottom_top.elempack)
        if pipeline is None:
            log.error("CumulativeSum %r: no pipeline for elempack %d", self.name, bottom_top.elempack)
            return -1
        extents = logical_extents(bottom_top)
        coord = COORD[dims][axis]
        grid = list(extents)
        grid[coord] = 1
        w, h, d, c = grid
        constants = blob_desc(bottom_top) + extents + [coord]
        cmd.record_pipeline(pipeline, [bottom_top], constants, (w, h * d, c))
        return 0
