"""GLU on the GPU: one glu.comp dispatch, each output element the first half's value times the
sigmoid of the second half's at the same place; every rank and axis, any elempack in, ncnn's
elempack for the halved shape out (whole packed elements when the halves keep lanes aligned)."""

from __future__ import annotations

import logging

from ..glu import GLU
from . import VulkanLayer
from ._remap import COORD, blob_desc, create_top, logical_shape, new_remap_pipelines, record_remap

log = logging.getLogger("ncnn_c")


class GLU_vulkan(VulkanLayer, GLU):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_glu = new_remap_pipelines(self, "glu", opt)
        return 0 if self.pipelines_glu else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        dims = bottom.dims
        axis = 0 if dims == 1 else self.axis + dims if self.axis < 0 else self.axis
        if not 0 <= axis < dims:
            log.error("GLU %r: axis %d out of range for a %d-D blob", self.name, self.axis, dims)
            return -1
        shape = list(logical_shape(bottom))
        half = shape[axis] // 2
        if half == 0:
            log.error("GLU %r: axis %d has size %d, nothing to halve", self.name, self.axis, shape[axis])
            return -1
        shape[axis] = half
        ret = create_top(top, tuple(shape), bottom, opt)
        if ret:
            return ret
        off = [0, 0, 0, 0]
        coord = COORD[dims][axis]
        off[coord] = half
        packed = blob_desc(bottom)[4]
        whole = int(bottom.elempack == 4 and top.elempack == 4 and (coord != packed or half % 4 == 0))
        return record_remap(self, cmd, self.pipelines_glu, [bottom, top], bottom, top, [whole, *off])
