"""Permute on the GPU: one crop.comp dispatch whose input position is the output position
with its coordinates reordered; any elempack in, ncnn's elempack for the new shape out."""

from __future__ import annotations

import logging

from ..permute import _AXES, Permute
from . import VulkanLayer
from ._remap import COORD, box_constants, create_top, logical_shape, new_remap_pipelines, record_remap

log = logging.getLogger("ncnn_c")


class Permute_vulkan(VulkanLayer, Permute):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_crop = new_remap_pipelines(self, "crop", opt)
        return 0 if self.pipelines_crop else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        dims = bottom.dims
        if dims == 1 or self.order_type == 0:
            top.share_from(bottom)
            return 0
        if self.order_type >= len(_AXES[dims]):
            log.error(
                "Permute %r: order_type %d does not apply to a %d-D blob", self.name, self.order_type, dims
            )
            return -1
        axes = _AXES[dims][self.order_type]  # output numpy axis i is input numpy axis axes[i]
        shape = logical_shape(bottom)
        ret = create_top(top, tuple(shape[a] for a in axes), bottom, opt)
        if ret:
            return ret
        perm = [0, 1, 2, 3]
        for i, a in enumerate(axes):
            perm[COORD[dims][a]] = COORD[dims][i]
        constants = box_constants(bottom, top, (), perm)
        return record_remap(self, cmd, self.pipelines_crop, [bottom, top], bottom, top, constants)
