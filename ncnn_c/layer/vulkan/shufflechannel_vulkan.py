"""ShuffleChannel on the GPU: one shufflechannel.comp dispatch, output channel c reading
input channel (c % groups) * per_group + c / groups; any elempack in, the same shape (and so
ncnn's elempack for it) out. A 1-D/2-D blob is one channel: it is copied unchanged."""

from __future__ import annotations

import logging

from ..shufflechannel import ShuffleChannel
from . import VulkanLayer
from ._remap import create_top, logical_shape, new_remap_pipelines, record_remap

log = logging.getLogger("ncnn_c")


class ShuffleChannel_vulkan(VulkanLayer, ShuffleChannel):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_shufflechannel = new_remap_pipelines(self, "shufflechannel", opt)
        return 0 if self.pipelines_shufflechannel else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        shape = logical_shape(bottom)
        channels = shape[0] if bottom.dims >= 3 else 1
        if channels % self.group:
            log.error(
                "ShuffleChannel %r: %d channels do not split into %d groups", self.name, channels, self.group
            )
            return -1
        groups = channels // self.group if self.reverse else self.group
        ret = create_top(top, shape, bottom, opt)
        if ret:
            return ret
        constants = [groups, channels // groups]
        return record_remap(self, cmd, self.pipelines_shufflechannel, [bottom, top], bottom, top, constants)
