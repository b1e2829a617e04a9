"""Slice on the GPU: one crop.comp dispatch per part, each copying its run of the axis;
any elempack in, ncnn's elempack for each part's shape out."""

from __future__ import annotations

import logging

from ..slice import Slice
from . import VulkanLayer
from ._remap import box_constants, create_top, logical_shape, new_remap_pipelines, record_remap

log = logging.getLogger("ncnn_c")


class Slice_vulkan(VulkanLayer, Slice):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_crop = new_remap_pipelines(self, "crop", opt)
        return 0 if self.pipelines_crop else -1

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        bottom = bottoms[0]
        dims = bottom.dims
        axis = 0 if dims == 1 else self.axis + dims if self.axis < 0 else self.axis
        if not 0 <= axis < dims:
            log.error("Slice %r: axis %d out of range for a %d-D blob", self.name, self.axis, dims)
            return -1
        shape = logical_shape(bottom)
        sizes = self.part_sizes(shape[axis], len(tops))
        if sizes is None:
            log.error(
                "Slice %r: slices %s / indices %s cannot cut %d into %d parts",
                self.name,
                self.slices.tolist(),
                self.indices.tolist(),
                shape[axis],
                len(tops),
            )
            return -1
        q = 0
        for top, s in zip(tops, sizes, strict=True):
            part = list(shape)
            part[axis] = s
            ret = create_top(top, tuple(part), bottom, opt)
            if ret:
                return ret
            offsets = [0] * dims
            offsets[axis] = q
            constants = box_constants(bottom, top, offsets)
            ret = record_remap(self, cmd, self.pipelines_crop, [bottom, top], bottom, top, constants)
            if ret:
                return ret
            q += s
        return 0
