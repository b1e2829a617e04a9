"""Softmax along any axis on the GPU, in place, as one dispatch over the lines of that axis.

Elempack 4 blobs use softmax_pack4.comp with the same line geometry counted in packed
elements: along the packed (outer) axis it folds each element's lanes into the line, along
any other axis it runs four lines at once."""

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
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        # [0]: a line of -inf gives NaN (0 / 0), as ncnn's Softmax (SDPA asks for 0)
        self.pipeline_softmax = self.new_pipeline("softmax", opt, [0], needed=self.may_see_elempack(1, opt))
        self.pipeline_softmax_pack4 = None
        if opt.use_packing_layout:
            pack4 = self.may_see_elempack(4, opt)
            self.pipeline_softmax_pack4 = self.new_pipeline("softmax_pack4", opt, [], needed=pack4)
            if self.pipeline_softmax_pack4 is None:
                return -1
        return 0 if self.pipeline_softmax else -1

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        dims = bottom_top.dims
        # a 1-D blob is normalised whole whatever the axis says, as on the CPU
        axis = 0 if dims == 1 else (self.axis + dims if self.axis < 0 else self.axis)
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
        constants = [n, inner, mid, outer, astride, bottom_top.cstep]
        if bottom_top.elempack == 4:
            if self.pipeline_softmax_pack4 is None:
                log.error("Softmax %r: an elempack 4 blob with use_packing_layout off", self.name)
                return -1
            # the packed axis is the outer one: axis 0 whatever the rank
            constants.append(int(axis == 0))
            cmd.record_pipeline(self.pipeline_softmax_pack4, [bottom_top], constants, (lines, 1, 1))
            return 0
        cmd.record_pipeline(self.pipeline_softmax, [bottom_top], constants, (lines, 1, 1))
        return 0
