"""ExpandDims on the GPU: the CPU layer's output shape, the scalars moved by one reshape.comp
dispatch (any elempack in, ncnn's elempack for the new shape out, as ncnn's GPU layer copies
rather than relabels); an unchanged shape aliases the bottom."""

from __future__ import annotations

from ..expanddims import ExpandDims
from . import VulkanLayer
from ._remap import LogicalDims, new_remap_pipelines, record_reshape


class ExpandDims_vulkan(VulkanLayer, ExpandDims):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_reshape = new_remap_pipelines(self, "reshape", opt)
        return 0 if self.pipelines_reshape else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        shape = self.out_shape(LogicalDims(bottom))
        if shape is None:
            return -1
        return record_reshape(self, cmd, self.pipelines_reshape, bottom, top, shape, opt)
