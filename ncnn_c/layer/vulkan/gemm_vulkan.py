"""Gemm on the GPU: every constant/input form of A, B and C, transposes, C's broadcasts,
output_transpose and output_N1M, in one dispatch. Constant operands are uploaded once as
fp32. Shapes and C's broadcast rule come from the CPU layer.

Packing follows ncnn (whose Gemm takes A, B and C in any elempack and writes elempack 4
when the top's row count divides by 4): with use_packing_layout the layer runs
gemm_pack4.comp, which reads every operand blob in whatever packing it arrives through one
index formula (no conversion dispatch) and computes 4 x 4 output tiles, storing vec4s into
a packed top. Without packing it runs gemm.comp (elempack 1, 1 x 4 outputs per
invocation), the shader MultiHeadAttention shares.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..gemm import Gemm
from . import LOCAL_2D, VulkanLayer, upload_weights

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
        self.support_packing = True
        self.pipeline_gemm = None
        self.pipeline_gemm_pack4 = None
        self.A_gpu: VkMat | None = None
        self.B_gpu: VkMat | None = None
        self.C_gpu: VkMat | None = None

    def check_params(self) -> int:
        ret = super().check_params()
        if ret == 0 and self.quantize_term:
            # an input A / B is quantized per row / as a whole by its max |value|: reductions the
            # one-dispatch shader has not; the int8 product runs exactly on the CPU instead
            self.support_vulkan = False
            log.info(
                "Gemm %r: quantize_term %d runs on the CPU inside a Vulkan net", self.name, self.quantize_term
            )
        return ret

    def create_pipeline_vk(self, opt) -> int:
        specs = [1 if self.constantA else 0, 1 if self.constantB else 0, float(self.alpha), float(self.beta)]
        if opt.use_packing_layout:
            self.pipeline_gemm_pack4 = self.new_pipeline("gemm_pack4", opt, specs, LOCAL_2D)
            return 0 if self.pipeline_gemm_pack4 else -1
        self.pipeline_gemm = self.new_pipeline("gemm", opt, specs, LOCAL_2D)
        return 0 if self.pipeline_gemm else -1

    def upload_model(self, cmd, opt) -> int:
        if (self.constantA and self._A is None) or (self.constantB and self._B is None):
            self._prepare()
        for name, arr in (("A_gpu", self._A), ("B_gpu", self._B), ("C_gpu", self._C)):
            if arr is None:
                continue
            # A as (M, K) and B as (K, N), row-major: the shader reads them with plain strides
            setattr(self, name, upload_weights(cmd, np.asarray(arr, dtype=np.float32), opt))
        return 0

    def release_gpu_data(self) -> None:
        self.A_gpu = self.B_gpu = self.C_gpu = None

    def _gpu_matrix(self, m, what: str):
        """(rows, w, row stride in packed elements, elempack) of an input blob read as a
        matrix, as the CPU layer reads it; a 1-D blob is one row whatever its packing."""
        if (
            m.elempack not in (1, 4)
            or m.dims not in (1, 2, 3)
            or (m.dims == 3 and (m.h != 1 or m.d != 1))
            or (m.elempack == 4 and self.pipeline_gemm_pack4 is None)
        ):
            log.error(
                "Gemm %r: %s must be a 1-D, 2-D or (c, 1, w) blob, got dims %d (w %d h %d c %d) elempack %d",
                self.name, what, m.dims, m.w, m.h, m.c, m.elempack,
            )  # fmt: skip
            return None
        if m.dims == 1:
            return 1, m.w * m.elempack, m.w * m.elempack, 1
        if m.dims == 2:
            return m.h * m.elempack, m.w, m.w, m.elempack
        return m.c * m.elempack, m.w, m.cstep, m.elempack

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        bottoms = bottom if isinstance(bottom, list) else [bottom]
        top_blob = top[0] if isinstance(top, list) else top
        need = (0 if self.constantA else 1) + (0 if self.constantB else 1)
        if len(bottoms) < need:
            log.error("Gemm %r: needs at least %d inputs, got %d", self.name, need, len(bottoms))
            return -1
        empty = type(bottoms[0])()
        i = 0
        # each operand: (blob, stored rows run along k, row stride in scalars, elempack)
        if self.constantA:
            M, K = self.constantM, self.constantK
            a_blob, a_krows, a_rs, a_p = empty, 0, K, 1
        else:
            a = self._gpu_matrix(bottoms[i], "A")
            if a is None:
                return -1
            rows, w, stride, a_p = a
            a_blob, a_krows, a_rs = bottoms[i], int(bool(self.transA)), stride * a_p
            M, K = (w, rows) if self.transA else (rows, w)
            i += 1
        if self.constantB:
            K2, N = self.constantK, self.constantN
            b_blob, b_krows, b_rs, b_p = empty, 1, N, 1
        else:
            b = self._gpu_matrix(bottoms[i], "B")
            if b is None:
                return -1
            rows, w, stride, b_p = b
            b_blob, b_krows, b_rs = bottoms[i], 0 if self.transB else 1, stride * b_p
            K2, N = (w, rows) if self.transB else (rows, w)
            i += 1
        if K != K2:
            log.error("Gemm %r: A is %dx%d but B is %dx%d", self.name, M, K, K2, N)
            return -1

        # C: element (m, n) at (m / c_p) * c_rs + m % c_p + n * c_sn
        c_blob, c_mode, c_p, c_rs, c_sn = empty, 0, 1, 0, 0
        if self._C is not None:
            cshape = self._C.shape
            if cshape != (1, 1) and (cshape[0] not in (1, M) or cshape[1] not in (1, N)):
                log.error("Gemm %r: constant C of shape %s does not fit %dx%d", self.name, cshape, M, N)
                return -1
            c_mode = 2
            c_rs, c_sn = _C_STRIDES[self.constant_broadcast_type_C](cshape[1])
        elif not self.constantC and len(bottoms) > i:
            c = bottoms[i]
            cw, ch = (c.w * c.elempack, 1) if c.dims == 1 else (c.w, c.h * c.elempack)
            kind = self.input_c_kind(c.dims, cw, ch, M, N) if c.dims in (1, 2) else None
            if (
                kind is None
                or c.elempack not in (1, 4)
                or (c.elempack == 4 and self.pipeline_gemm_pack4 is None)
            ):
                log.error(
                    "Gemm %r: C (dims %d, w %d h %d elempack %d) broadcasts over neither M=%d nor N=%d",
                    self.name, c.dims, cw, ch, c.elempack, M, N,
                )  # fmt: skip
                return -1
            c_blob, c_mode = c, 1
            c_rs, c_sn = _C_STRIDES[kind](c.w)
            if c.dims == 2 and c.elempack == 4:
                # a packed M-row C: M x N (kind 3) or M x 1 (kind 2)
                c_p, c_rs, c_sn = 4, c.w * 4, c_sn * 4

        rows, cols = (N, M) if self.output_transpose else (M, N)
        packed = self.pipeline_gemm_pack4 is not None
        out_p = 4 if packed and rows % 4 == 0 else 1
        lane = 2 if self.storage_fp16(opt) else 4
        alloc = opt.blob_vkallocator
        if self.output_N1M:
            top_blob.create(cols, 1, rows // out_p, elemsize=lane * out_p, elempack=out_p, allocator=alloc)
            row_stride = top_blob.cstep
        else:
            top_blob.create(cols, rows // out_p, elemsize=lane * out_p, elempack=out_p, allocator=alloc)
            row_stride = cols
        if top_blob.empty():
            return -100

        bindings = [a_blob, b_blob, c_blob, top_blob, self.A_gpu, self.B_gpu, self.C_gpu]
        if packed:
            constants = [M, N, K]
            constants += [a_krows, a_p.bit_length() - 1, a_rs, a_p, b_krows, b_p.bit_length() - 1, b_rs, b_p]
            constants += [c_mode, c_p.bit_length() - 1, c_rs, c_sn]
            constants += [int(bool(self.output_transpose)), row_stride * out_p, int(out_p == 4)]
            cmd.record_pipeline(self.pipeline_gemm_pack4, bindings, constants, (-(-N // 4), -(-M // 4), 1))
            return 0
        # gemm.comp: elempack 1 operands through (m, k) / (k, n) strides
        a_sm, a_sk = (1, a_rs) if a_krows else (a_rs, 1)
        b_sk, b_sn = (b_rs, 1) if b_krows else (1, b_rs)
        o_sm, o_sn = (1, row_stride) if self.output_transpose else (row_stride, 1)
        constants = [M, N, K, a_sm, a_sk, b_sk, b_sn, c_mode, c_rs, c_sn, o_sm, o_sn, 0, 0, 0, 0]
        cmd.record_pipeline(self.pipeline_gemm, bindings, constants, (-(-N // 4), M, 1))
        return 0
