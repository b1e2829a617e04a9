"""LRN on the GPU, in place, in two passes: the window sums of squares (across channels, or
the rows of a spatial window) into an fp32 scratch buffer, then the normalisation (adding
up a spatial window's row sums along its column first: separable, 2 * local_size loads a
value rather than local_size^2). Packed blobs (channels
of 3-D, rows of 2-D) are read where they lie through shift/mask addressing."""

from __future__ import annotations

import numpy as np

from ..lrn import LRN
from . import LOCAL_2D, VulkanLayer
from ._meanvar import logical_shape


def _addressing(m) -> tuple[int, int, int, list[int]]:
    """(w, h, c) logical and the shift/mask push constants of lrn_square.comp for ``m``."""
    p = m.elempack
    ps = p.bit_length() - 1
    if m.dims == 1:
        return m.w * p, 1, 1, [0, 0, 0, 0, 0, 0, 1]
    if m.dims == 2:
        return m.w, m.h * p, 1, [0, 0, 0, ps, m.w * p, p - 1, p]
    return m.w, m.h, m.c * p, [ps, m.cstep * p, p - 1, 0, m.w * p, 0, p]


class LRN_vulkan(VulkanLayer, LRN):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        n = self.local_size if self.region_type == 0 else self.local_size * self.local_size
        self.pipeline_square = self.new_pipeline(
            "lrn_square", opt, [self.region_type, self.local_size], LOCAL_2D
        )
        spec = [float(np.float32(self.alpha / n)), float(np.float32(self.bias)), float(np.float32(self.beta))]
        spec += [self.region_type, self.local_size]
        self.pipeline_norm = self.new_pipeline("lrn_norm", opt, spec, LOCAL_2D)
        return 0 if self.pipeline_square and self.pipeline_norm else -1

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat

        if not self._accepts(logical_shape(bottom_top)):
            return -1
        w, h, c, addressing = _addressing(bottom_top)
        square = VkMat()
        square.create(w * h * c, allocator=opt.workspace_vkallocator)
        if square.empty():
            return -100
        constants = [w, h, c, *addressing]
        cmd.record_pipeline(self.pipeline_square, [bottom_top, square], constants, (w, h, c))
        cmd.record_pipeline(self.pipeline_norm, [bottom_top, square], constants, (w, h, c))
        return 0
