"""Padding on the GPU: one padding.comp dispatch over the output, each coordinate of a
border position folded back into the input (replicate, reflect) or filled with the
constant or its channel's value; any elempack in, ncnn's elempack for the output shape out.
Pads, output shape and the checks come from the CPU layer; the per-channel values are
uploaded once. A blob holding int8 values (marked, ``_int8.py``) is padded with the constant
cast to int8, as the CPU pads an int8 blob (per-channel values are used as they are)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..padding import CONSTANT, REFLECT, Padding, int8_pad_value
from . import VulkanLayer
from ._int8 import holds_int8
from ._remap import COORD, create_top, logical_extents, logical_shape, new_remap_pipelines, record_remap

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class Padding_vulkan(VulkanLayer, Padding):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.per_channel_pad_data_gpu: VkMat | None = None

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_padding = new_remap_pipelines(self, "padding", opt, [self.pad_type])
        return 0 if self.pipelines_padding else -1

    def upload_model(self, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat
        from ...mat import Mat

        self.per_channel_pad_data_gpu = VkMat()
        if self.per_channel_pad_data.size:
            cmd.record_upload(
                Mat(np.ascontiguousarray(self.per_channel_pad_data)), self.per_channel_pad_data_gpu, opt
            )
        return 0

    def release_gpu_data(self) -> None:
        self.per_channel_pad_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        dims = bottom.dims
        pads = self.pads(dims)
        if all(p == (0, 0) for p in pads):
            top.share_from(bottom)
            return 0
        shape = logical_shape(bottom)
        if self.pad_type == REFLECT and any(
            max(b, a) >= n for (b, a), n in zip(pads, shape, strict=True) if b or a
        ):
            log.error("Padding %r: reflect pads %s must be shorter than the axes %s", self.name, pads, shape)
            return -1
        per_channel = self.pad_type == CONSTANT and self.per_channel_pad_data_size and dims >= 3
        if per_channel:
            nvalues = shape[0] + pads[0][0] + pads[0][1]
            if self.per_channel_pad_data.size < nvalues:
                log.error(
                    "Padding %r: %d per-channel values for %d channels",
                    self.name,
                    self.per_channel_pad_data.size,
                    nvalues,
                )
                return -1
        ret = create_top(top, tuple(n + b + a for n, (b, a) in zip(shape, pads, strict=True)), bottom, opt)
        if ret:
            return ret
        before = [0, 0, 0, 0]
        for axis, (b, _) in enumerate(pads):
            before[COORD[dims][axis]] = b
        # lanes stay together when the packed axis (numpy axis 0 at every rank) is padded by
        # whole packed elements with a constant (replicate / reflect would spread or reverse
        # them) or not at all
        whole = pads[0] == (0, 0) or (self.pad_type == CONSTANT and pads[0][0] % 4 == 0)
        value = float(int8_pad_value(self.value)) if holds_int8(bottom) else float(self.value)
        constants = before + logical_extents(bottom) + [value, int(bool(per_channel)), int(whole)]
        bindings = [bottom, top, self.per_channel_pad_data_gpu]
        return record_remap(self, cmd, self.pipelines_padding, bindings, bottom, top, constants)
