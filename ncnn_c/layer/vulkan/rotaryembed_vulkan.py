"""RotaryEmbed on the GPU: one dispatch, one invocation per pair of x, both pair forms
(halves or interleaved neighbours). Elempack 1: the net unpacks a packed x or cache (the
layer is a few loads per value; a packed form would only move the lanes)."""

from __future__ import annotations

import logging

from ..rotaryembed import RotaryEmbed
from . import LOCAL_1D, VulkanLayer

log = logging.getLogger("ncnn_c")


class RotaryEmbed_vulkan(VulkanLayer, RotaryEmbed):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False
        self.pipeline_rotaryembed = None

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_rotaryembed = self.new_pipeline(
            "rotaryembed", opt, [int(bool(self.interleaved))], LOCAL_1D
        )
        return 0 if self.pipeline_rotaryembed else -1

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        if len(bottoms) != 3 or not tops:
            log.error("RotaryEmbed %r: needs x, cos and sin inputs, got %d", self.name, len(bottoms))
            return -1
        x, cos, sin = bottoms
        if x.dims not in (2, 3) or x.elempack != 1 or x.w % 2:
            log.error(
                "RotaryEmbed %r: x must be a (heads, seqlen, embed_dim) blob with an even embed_dim, "
                "got dims %d (w %d h %d c %d) elempack %d",
                self.name, x.dims, x.w, x.h, x.c, x.elempack,
            )  # fmt: skip
            return -1
        half = x.w // 2
        for what, m in (("cos", cos), ("sin", sin)):
            if m.dims != 2 or m.elempack != 1 or m.h < x.h or m.w < half:
                log.error(
                    "RotaryEmbed %r: the %s cache must be a 2-D blob of at least (%d, %d), got dims %d (w %d h %d)",
                    self.name, what, x.h, half, m.dims, m.w, m.h,
                )  # fmt: skip
                return -1
        top = tops[0]
        top.create_like(x, allocator=opt.blob_vkallocator)
        if top.empty():
            return -100
        heads = x.c if x.dims == 3 else 1
        cstep = x.cstep if x.dims == 3 else x.w * x.h
        constants = [half, x.h, heads, x.w, cstep, cos.w, sin.w]
        cmd.record_pipeline(self.pipeline_rotaryembed, [x, cos, sin, top], constants, (half, x.h, heads))
        return 0
