"""Concat on the GPU along any axis of 1-D..4-D blobs: one copy dispatch per input,
each writing its blob at a running offset into the output.

Joining 3-D/4-D blobs along channels (SqueezeNet's fire modules) moves whole channels:
that copy runs flat over vec4s.

Packed blobs: when every input has the same elempack P the copy works on scalars, with a
packed element's P lanes as P consecutive scalars of a row P times wider; offsets along the
packed (outer) axis count packed elements, so the output keeps elempack P. Inputs of mixed
packing are unpacked first (the shared layout conversion) and joined at elempack 1.

1-D blobs are joined end to end whatever the axis param says, as ncnn does."""

from __future__ import annotations

import logging

from ..concat import Concat
from . import LOCAL_2D, VulkanLayer, create_like_shape, is_fp16, numpy_shape, record_convert, shape4

log = logging.getLogger("ncnn_c")

# numpy-order axis -> index of the copyto offset (x, y, d, c) it moves, per dims
_OFFSET_SLOT = {1: (0,), 2: (1, 0), 3: (3, 1, 0), 4: (3, 2, 1, 0)}


class Concat_vulkan(VulkanLayer, Concat):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_copyto = self.new_pipeline("copyto", opt, [], LOCAL_2D)
        self.pipeline_packing = self.new_packing_pipeline(opt)
        return 0 if self.pipeline_copyto and self.pipeline_packing else -1

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        if len({b.elempack for b in bottoms}) > 1:
            unpacked = []
            for b in bottoms:
                if b.elempack != 1:
                    u = type(b)()
                    record_convert(cmd, self.pipeline_packing, b, u, 1, is_fp16(b), opt)
                    b = u
                unpacked.append(b)
            bottoms = unpacked
        dims = bottoms[0].dims
        # 1-D blobs join end to end whatever the axis says, as ncnn (and the CPU layer) do
        axis = 0 if dims == 1 else (self.axis + dims if self.axis < 0 else self.axis)
        shapes = [numpy_shape(b) for b in bottoms]
        if not 0 <= axis < dims or any(b.dims != dims for b in bottoms):
            log.error("Concat %r: cannot join %s along axis %d", self.name, shapes, self.axis)
            return -1
        rest = [s[:axis] + s[axis + 1 :] for s in shapes]
        if any(r != rest[0] for r in rest):
            log.error("Concat %r: shapes %s differ off axis %d", self.name, shapes, self.axis)
            return -1

        out_shape = list(shapes[0])
        out_shape[axis] = sum(s[axis] for s in shapes)
        top = tops[0]
        create_like_shape(top, out_shape, bottoms[0], opt)
        if top.empty():
            return -100

        slot = _OFFSET_SLOT[dims][axis]
        p = top.elempack
        # a packed element's lanes are p consecutive scalars: rows p times wider
        outw, outh, _, _, outcstep = shape4(top)
        outw, outcstep = outw * p, outcstep * p
        start = 0
        for b, s in zip(bottoms, shapes, strict=True):
            w, h, d, c, cstep = shape4(b)
            w, cstep = w * p, cstep * p
            offsets = [0, 0, 0, 0]
            offsets[slot] = start * p if slot == 0 else start
            start += s[axis]
            constants = [w, h, d, c, cstep, outw, outh, outcstep, *offsets]
            if slot == 3 and cstep == outcstep and cstep % 4 == 0:
                # whole channels into whole channels: one contiguous run
                vec4s = c * cstep // 4
                cmd.record_pipeline(
                    self.pipeline_copyto, [b, top], constants + [vec4s], (8, -(-vec4s // 8), 1)
                )
            else:
                cmd.record_pipeline(self.pipeline_copyto, [b, top], constants + [0], (w, h * d, c))
        return 0
