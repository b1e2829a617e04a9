"""MatMul on the GPU: every rank pair (1-D to 4-D) with numpy's batch broadcasting and
transB, one dispatch of matmul.comp (which SDPA shares).

The operands are read in place through strides: a 1-D operand is a row of A (a column of
B) with stride 0 along its missing axis, transB swaps B's row and column strides, and the
batch axes (up to two: c and d of a 4-D result) each take the operand's stride or 0 where it
broadcasts. Elempack 1 (the net unpacks packed inputs): the blobs MatMul meets are small
batches of heads, not worth a packed variant."""

from __future__ import annotations

import logging

from ..matmul import MatMul
from . import LOCAL_2D, VulkanLayer, numpy_shape

log = logging.getLogger("ncnn_c")


def axis_strides(m) -> tuple[int, ...]:
    """The scalar stride of each numpy axis of an elempack-1 blob (ncnn's layout: rows of w,
    depth planes of h*w, channels cstep apart)."""
    if m.dims == 1:
        return (1,)
    if m.dims == 2:
        return (m.w, 1)
    if m.dims == 3:
        return (m.cstep, m.w, 1)
    return (m.cstep, m.h * m.w, m.w, 1)


def batch_strides(shape, strides, batch) -> tuple[int, int]:
    """The (c, d) strides of an operand whose batch axes are ``shape`` (strides ``strides``)
    over the broadcast batch ``batch`` (numpy's right alignment; at most two axes): 0 where
    the operand lacks an axis or broadcasts along it."""
    out = [0, 0]
    for i in range(1, len(batch) + 1):
        if i <= len(shape) and shape[-i] != 1:
            out[2 - i] = strides[-i]
    return out[0], out[1]


def batch_grid(batch) -> tuple[int, int]:
    """(c, d) extents of a broadcast batch of at most two axes."""
    padded = (1, 1, *batch)[-2:]
    return padded[0], padded[1]


class MatMul_vulkan(VulkanLayer, MatMul):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False
        self.pipeline_matmul = None

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_matmul = self.new_pipeline("matmul", opt, [], LOCAL_2D)
        return 0 if self.pipeline_matmul else -1

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        if len(bottoms) != 2 or not tops:
            log.error(
                "MatMul %r: needs inputs A and B and one output, got %d inputs", self.name, len(bottoms)
            )
            return -1
        A, B = bottoms
        for what, m in (("A", A), ("B", B)):
            if m.dims not in (1, 2, 3, 4) or m.elempack != 1:
                log.error(
                    "MatMul %r: %s must be a 1-D to 4-D elempack 1 blob, got dims %d elempack %d",
                    self.name, what, m.dims, m.elempack,
                )  # fmt: skip
                return -1
        a_shape, b_shape = numpy_shape(A), numpy_shape(B)
        a_st, b_st = axis_strides(A), axis_strides(B)
        # A as (batch..., M, K), B as (batch..., K, N); a 1-D operand has no M (N) axis
        M, K = (1, a_shape[0]) if A.dims == 1 else a_shape[-2:]
        a_sm, a_sk = (0, 1) if A.dims == 1 else a_st[-2:]
        if B.dims == 1:
            K2, N, b_sk, b_sn = b_shape[0], 1, 1, 0
        elif self.transB:
            N, K2 = b_shape[-2:]
            b_sn, b_sk = b_st[-2:]
        else:
            K2, N = b_shape[-2:]
            b_sk, b_sn = b_st[-2:]
        a_batch, b_batch = a_shape[:-2], b_shape[:-2]
        batch = _broadcast(a_batch, b_batch)
        if K != K2 or batch is None or len(batch) > 2:
            log.error(
                "MatMul %r: A of shape %s does not multiply B of shape %s%s",
                self.name, a_shape, b_shape, " (transB)" if self.transB else "",
            )  # fmt: skip
            return -1

        out_shape = (*batch, *(() if A.dims == 1 else (M,)), *(() if B.dims == 1 else (N,))) or (1,)
        top = tops[0]
        top.create(*out_shape[::-1], elemsize=A.elemsize, elempack=1, allocator=opt.blob_vkallocator)
        if top.empty():
            return -100
        o_st = axis_strides(top)
        # the output's matrix axes: (M, N), (N,) when A is 1-D, (M,) when B is 1-D, () for both
        o_sm = o_st[-2] if A.dims > 1 and B.dims > 1 else (o_st[-1] if A.dims > 1 else 0)
        o_sn = o_st[-1] if B.dims > 1 else 0
        n_mat = int(A.dims > 1) + int(B.dims > 1)
        o_batch_st = o_st[: len(o_st) - n_mat] if n_mat else o_st[:0]

        bc, bd = batch_grid(batch)
        constants: list[int | float] = [M, N, K, bd]
        constants += [a_sm, a_sk, *batch_strides(a_batch, a_st[: len(a_batch)], batch)]
        constants += [b_sk, b_sn, *batch_strides(b_batch, b_st[: len(b_batch)], batch)]
        constants += [0, 0, 0, 0, 0]
        constants += [o_sm, o_sn, *batch_strides(batch, o_batch_st, batch), 1.0]
        empty = type(A)()
        cmd.record_pipeline(self.pipeline_matmul, [A, B, empty, top], constants, (-(-N // 4), M, bc * bd))
        return 0


def _broadcast(a, b) -> tuple[int, ...] | None:
    """numpy's broadcast of two batch shapes; None when they do not broadcast."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)
