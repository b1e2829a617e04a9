"""Softmax along any axis on the GPU, in place, as one dispatch over the lines of that axis."""

from __future__ import annotations

import logging

from ..softmax import Softmax
from . import VulkanLayer, channel_split

log = logging.getLogger("ncnn_c")


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


class Softmax_vulkan(VulkanLayer, Softmax):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_softmax = self.new_pipeline("softmax", opt, [])
        return 0 if self.pipeline_softmax else -1

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        dims = bottom_top.dims
        axis = self.axis + dims if self.axis < 0 else self.axis
        if not 0 <= axis < dims:
            log.error("Softmax %r: axis %d out of range for a %d-D blob", self.name, self.axis, dims)
            return -1
        channels, extents = channel_split(bottom_top)
        if dims >= 3 and axis == 0:
            # across channels: each line is one in-channel position, stepping by cstep
            n, inner, mid, outer, astride = channels, _prod(extents), 1, 1, bottom_top.cstep
        else:
            j = axis - 1 if dims >= 3 else axis
            n, inner, mid, outer = extents[j], _prod(extents[j + 1 :]), _prod(extents[:j]), channels
            astride = inner
        lines = inner * mid * outer
        cmd.record_pipeline(
            self.pipeline_softmax,
            [bottom_top],
            [n, inner, mid, outer, astride, bottom_top.cstep],
            (lines, 1, 1),
        )
        return 0
