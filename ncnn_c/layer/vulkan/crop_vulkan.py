"""Crop on the GPU: one crop.comp dispatch copying the box, any elempack in, ncnn's elempack
for the box's shape out; a box that is the whole blob aliases it.

The box comes from the CPU layer's own helpers (offsets + sizes, starts/ends/axes, or the
size of a reference blob). Two forms need host values and stay on the CPU: the expression
params (starts_expr ...), and a reference blob holding the offsets as data (woffset -233)."""

from __future__ import annotations

import logging
from typing import cast

from ...mat import Mat
from ..crop import UNSET, Crop
from . import VulkanLayer
from ._remap import LogicalDims, box_constants, create_top, logical_shape, new_remap_pipelines, record_remap

log = logging.getLogger("ncnn_c")


class Crop_vulkan(VulkanLayer, Crop):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def check_params(self) -> int:
        ret = super().check_params()
        roi_data = not self.one_blob_only and self.woffset == UNSET and not self.numpy_style()
        self.support_vulkan = self._exprs is None and not roi_data
        return ret

    def create_pipeline_vk(self, opt) -> int:
        self.pipelines_crop = new_remap_pipelines(self, "crop", opt)
        return 0 if self.pipelines_crop else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if isinstance(bottom, list):
            if len(bottom) < 2 and not self.one_blob_only:
                log.error("Crop %r: needs a reference blob as second input", self.name)
                return -1
            src, out, ref = bottom[0], top[0], bottom[1] if len(bottom) > 1 else None
        else:
            src, out, ref = bottom, top, None
        shape = logical_shape(src)
        if self.numpy_style():
            box = self._box_from_arrays(shape)
        elif self.one_blob_only or ref is None:
            box = self._box_from_params(shape)
        else:
            # the helper reads only the reference's dims and sizes, which LogicalDims carries
            box = self._box_from_reference(shape, cast(Mat, LogicalDims(ref)))
        if box is None:
            return -1
        if any(off < 0 or size <= 0 or off + size > n for (off, size), n in zip(box, shape, strict=True)):
            log.error("Crop %r: box %s (offset, size per axis) does not fit in %s", self.name, box, shape)
            return -1
        if all(size == n for (_, size), n in zip(box, shape, strict=True)):
            out.share_from(src)
            return 0
        ret = create_top(out, tuple(size for _, size in box), src, opt)
        if ret:
            return ret
        constants = box_constants(src, out, [off for off, _ in box])
        return record_remap(self, cmd, self.pipelines_crop, [src, out], src, out, constants)
