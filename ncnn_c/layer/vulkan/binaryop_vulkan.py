"""BinaryOp on the GPU: the scalar form in place, two blobs of one shape elementwise, and
ncnn's broadcasting for every rank pair and packing mix, each in one dispatch.

Elementwise work runs scalar shaders over the lanes of packed elements (they are consecutive
scalars), so elempack 1 and 4 share them. Broadcasting reuses the CPU layer's shape rules
(``broadcast_shapes``) and turns them into per-input slot sizes and strides on the host; the
shader (binaryop_broadcast.comp) then addresses both operands of any packing with the same
arithmetic. A broadcast output is packed when packing is on and its outer axis divides by 4.
"""

from __future__ import annotations

import logging

from ..binaryop import BinaryOp, broadcast_shapes
from . import LOCAL_2D, VulkanLayer, numpy_shape, record_elementwise, shape4

log = logging.getLogger("ncnn_c")

# output rank -> the slot (of c d h w) each of its numpy axes lands on
_SLOTS = {1: (0,), 2: (0, 3), 3: (0, 2, 3), 4: (0, 1, 2, 3)}


def _logical_shape(m) -> tuple[int, ...]:
    """numpy shape of ``m`` counting scalars, not packed elements, on the outer axis."""
    shape = numpy_shape(m)
    return (shape[0] * m.elempack,) + shape[1:]


def _axis_strides(m) -> list[int]:
    """Per numpy axis of ``m``, the step between neighbours: in packed elements for the
    outer axis (it applies to coordinate // elempack), in scalars-per-lane for the others."""
    shape = numpy_shape(m)
    steps = [1] * len(shape)
    for k in range(len(shape) - 2, 0, -1):
        steps[k] = steps[k + 1] * shape[k + 1]
    if m.dims >= 3:
        steps[0] = m.cstep
    elif m.dims == 2:
        steps[0] = m.w
    return steps


def _slot_constants(m, other: tuple[int, ...], rank: int) -> list[int]:
    """[4 slot sizes, 4 slot strides, elempack] of input ``m`` for an output of ``rank`` whose
    other operand has numpy shape ``other``."""
    shape = _logical_shape(m)
    if len(shape) == 1 and rank > 1:
        # the CPU layer's rule: a 1-D blob lines up with the outer axis when it matches it
        where = [0] if shape[0] == other[0] else [rank - 1]
    else:
        where = list(range(len(shape)))  # the blob fills the outer axes
    sizes, steps = [1, 1, 1, 1], [0, 0, 0, 0]
    for k, (n, step) in enumerate(zip(shape, _axis_strides(m), strict=True)):
        slot = _SLOTS[rank][where[k]]
        sizes[slot], steps[slot] = n, step
    # a 1-D blob's scalars lie in the same order packed or not: address it as elempack 1
    return sizes + steps + [1 if m.dims == 1 else m.elempack]


class BinaryOp_vulkan(VulkanLayer, BinaryOp):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_binaryop = None
        self.pipeline_broadcast = None

    def create_pipeline_vk(self, opt) -> int:
        if self.with_scalar:
            specs = [self.op_type, float(self.b)]
            self.pipeline_binaryop = self.new_pipeline("binaryop_scalar", opt, specs)
            return 0 if self.pipeline_binaryop else -1
        self.pipeline_binaryop = self.new_pipeline("binaryop", opt, [self.op_type])
        self.pipeline_broadcast = self.new_pipeline("binaryop_broadcast", opt, [self.op_type], LOCAL_2D)
        return 0 if self.pipeline_binaryop and self.pipeline_broadcast else -1

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        if not self.with_scalar:
            log.error("BinaryOp %r: only the scalar form works in place", self.name)
            return -1
        record_elementwise(cmd, self.pipeline_binaryop, bottom_top)
        return 0

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if self.with_scalar:
            return super().forward_vk(bottom, top, cmd, opt)
        if len(bottom) != 2:
            log.error("BinaryOp %r: needs two input blobs, got %d", self.name, len(bottom))
            return -1
        a, b = bottom
        sa, sb = _logical_shape(a), _logical_shape(b)
        shapes = broadcast_shapes(sa, sb)
        if shapes is None:
            log.error("BinaryOp %r: cannot broadcast shapes %s and %s", self.name, sa, sb)
            return -1
        oshape = shapes[2]
        out = top[0]
        alloc = opt.blob_vkallocator
        lane = a.elemsize // a.elempack
        if sa == sb and a.elempack == b.elempack and (a.dims < 3 or a.cstep == b.cstep):
            out.create(*numpy_shape(a)[::-1], elemsize=a.elemsize, elempack=a.elempack, allocator=alloc)
            if out.empty():
                return -100
            w, h, d, c, cstep = shape4(a)
            n = w * h * d * a.elempack
            constants = [n, c, cstep * a.elempack]
            cmd.record_pipeline(self.pipeline_binaryop, [a, b, out], constants, (n, c, 1))
            return 0

        pk = 4 if opt.use_packing_layout and oshape[0] % 4 == 0 else 1
        packed = (oshape[0] // pk,) + tuple(oshape[1:])
        out.create(*packed[::-1], elemsize=lane * pk, elempack=pk, allocator=alloc)
        if out.empty():
            return -100
        rank = len(oshape)
        osizes = [1, 1, 1, 1]
        for k, n in enumerate(oshape):
            osizes[_SLOTS[rank][k]] = n
        ostride = out.cstep if rank >= 3 else (out.w if rank == 2 else 1)
        inner = osizes[1] * osizes[2] * osizes[3]
        constants = [*osizes[1:], oshape[0] // pk, ostride, pk]
        constants += _slot_constants(a, sb, rank)
        constants += _slot_constants(b, sa, rank)
        cmd.record_pipeline(self.pipeline_broadcast, [a, b, out], constants, (inner * pk, oshape[0] // pk, 1))
        return 0
