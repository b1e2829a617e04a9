"""Gemm on the GPU: every constant/input form of A, B and C, transposes, C's broadcasts,
output_transpose and output_N1M, in one dispatch of gemm.comp (1 x 4 outputs per
invocation). Constant operands are uploaded once as fp32; blobs are elempack 1 (the net
unpacks before this layer). Shapes and C's broadcast rule come from the CPU layer.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..gemm import Gemm
from . import LOCAL_2D, VulkanLayer

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")

# C broadcast kind -> (stride along M, stride along N) given the row length of a full C
_C_STRIDES = {
    0: lambda w: (0, 0),
    1: lambda w: (1, 0),
    2: lambda w: (1, 0),
    3: lambda w: (w, 1),
    4: lambda w: (0, 1),
}


class Gemm_vulkan(VulkanLayer, Gemm):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False
        self.pipeline_gemm = None
        self.A_gpu: VkMat | None = None
        self.B_gpu: VkMat | None = None
        self.C_gpu: VkMat | None = None

    def create_pipeline_vk(self, opt) -> int:
        specs = [1 if self.constantA else 0, 1 if self.constantB else 0, float(self.alpha), float(self.beta)]
        self.pipeline_gemm = self.new_pipeline("gemm", opt, specs, LOCAL_2D)
        return 0 if self.pipeline_gemm else -1

    def upload_model(self, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat
        from ...mat import Mat

        if (self.constantA and self._A is None) or (self.constantB and self._B is None):
            self._prepare()
        for name, arr in (("A_gpu", self._A), ("B_gpu", self._B), ("C_gpu", self._C)):
            if arr is None:
                continue
            # A as (M, K) and B as (K, N), row-major: the shader reads them with plain strides
            vk = VkMat()
            cmd.record_upload(Mat(np.ascontiguousarray(arr, dtype=np.float32).reshape(-1)), vk, opt)
            setattr(self, name, vk)
        return 0

    def release_gpu_data(self) -> None:
        self.A_gpu = self.B_gpu = self.C_gpu = None

    def _gpu_matrix(self, m, what: str):
        """(rows, w, row stride) of an input blob read as a matrix, as the CPU layer reads it."""
        if m.elempack != 1 or m.dims not in (1, 2, 3) or (m.dims == 3 and m.h != 1):
            log.error(
                "Gemm %r: %s must be a 1-D, 2-D or (c, 1, w) blob, got dims %d (w %d h %d c %d) elempack %d",
                self.name, what, m.dims, m.w, m.h, m.c, m.elempack,
            )  # fmt: skip
            return None
        if m.dims == 1:
            return 1, m.w, m.w
        if m.dims == 2:
            return m.h, m.w, m.w
        return m.c, m.w, m.cstep

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        bottoms = bottom if isinstance(bottom, list) else [bottom]
        top_blob = top[0] if isinstance(top, list) else top
        need = (0 if self.constantA else 1) + (0 if self.constantB else 1)
        if len(bottoms) < need:
            log.error("Gemm %r: needs at least %d inputs, got %d", self.name, need, len(bottoms))
            return -1
        empty = type(bottoms[0])()
        i = 0
        if self.constantA:
            M, K = self.constantM, self.constantK
            a_blob, a_sm, a_sk = empty, K, 1
        else:
            a = self._gpu_matrix(bottoms[i], "A")
            if a is None:
                return -1
            rows, w, stride = a
            a_blob = bottoms[i]
            (M, K), (a_sm, a_sk) = ((w, rows), (1, stride)) if self.transA else ((rows, w), (stride, 1))
            i += 1
        if self.constantB:
            K2, N = self.constantK, self.constantN
            b_blob, b_sk, b_sn = empty, N, 1
        else:
            b = self._gpu_matrix(bottoms[i], "B")
            if b is None:
                return -1
            rows, w, stride = b
            b_blob = bottoms[i]
            (K2, N), (b_sk, b_sn) = ((w, rows), (1, stride)) if self.transB else ((rows, w), (stride, 1))
            i += 1
        if K != K2:
            log.error("Gemm %r: A is %dx%d but B is %dx%d", self.name, M, K, K2, N)
            return -1

        c_blob, c_mode, c_sm, c_sn = empty, 0, 0, 0
        if self._C is not None:
            cshape = self._C.shape
            if cshape != (1, 1) and (cshape[0] not in (1, M) or cshape[1] not in (1, N)):
                log.error("Gemm %r: constant C of shape %s does not fit %dx%d", self.name, cshape, M, N)
                return -1
            c_mode = 2
            c_sm, c_sn = _C_STRIDES[self.constant_broadcast_type_C](cshape[1])
        elif not self.constantC and len(bottoms) > i:
            c = bottoms[i]
            kind = self.input_c_kind(c.dims, c.w, c.h, M, N) if c.dims in (1, 2) else None
            if kind is None or c.elempack != 1:
                log.error(
                    "Gemm %r: C (dims %d, w %d h %d) broadcasts over neither M=%d nor N=%d",
                    self.name, c.dims, c.w, c.h, M, N,
                )  # fmt: skip
                return -1
            c_blob, c_mode = c, 1
            c_sm, c_sn = _C_STRIDES[kind](c.w)

        rows, cols = (N, M) if self.output_transpose else (M, N)
        lane = 2 if self.storage_fp16(opt) else 4
        alloc = opt.blob_vkallocator
        if self.output_N1M:
            top_blob.create(cols, 1, rows, elemsize=lane, elempack=1, allocator=alloc)
            row_stride = top_blob.cstep
        else:
            top_blob.create(cols, rows, elemsize=lane, elempack=1, allocator=alloc)
            row_stride = cols
        if top_blob.empty():
            return -100
        o_sm, o_sn = (1, row_stride) if self.output_transpose else (row_stride, 1)

        constants = [M, N, K, a_sm, a_sk, b_sk, b_sn, c_mode, c_sm, c_sn, o_sm, o_sn, 0, 0, 0, 0]
        bindings = [a_blob, b_blob, c_blob, top_blob, self.A_gpu, self.B_gpu, self.C_gpu]
        cmd.record_pipeline(self.pipeline_gemm, bindings, constants, (-(-N // 4), M, 1))
        return 0
