"""MultiHeadAttention on the GPU, without kv_cache: seven dispatches of two shaders.

The projections (q, k, v and out) and the per-head products are all strided GEMMs of
gemm.comp: a projection multiplies the input rows by the constant weights with the bias as
a per-column C (q's scale as alpha, applied after the bias as on the CPU); the heads are the
z axis of one batched dispatch, each reading its head_dim columns of the projected rows
through batch strides, so no per-head copy or transpose is made. The attention mask is the
C of the score product. The softmax over each score row is softmax.comp's.

With kv_cache the layer runs on the CPU (check_params clears support_vulkan): the caches
change shape from step to step and are small.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..multiheadattention import MultiHeadAttention
from . import LOCAL_1D, LOCAL_2D, VulkanLayer, upload_weights

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class MultiHeadAttention_vulkan(VulkanLayer, MultiHeadAttention):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False
        self.pipeline_proj_q = None
        self.pipeline_proj = None
        self.pipeline_bmm = None
        self.pipeline_softmax = None
        self.weights_gpu: dict[str, VkMat] = {}
        self.biases_gpu: dict[str, VkMat] = {}

    def check_params(self) -> int:
        ret = super().check_params()
        self.support_vulkan = not self.kv_cache
        return ret

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_proj_q = self.new_pipeline("gemm", opt, [0, 1, float(self.scale), 1.0], LOCAL_2D)
        self.pipeline_proj = self.new_pipeline("gemm", opt, [0, 1, 1.0, 1.0], LOCAL_2D)
        self.pipeline_bmm = self.new_pipeline("gemm", opt, [0, 0, 1.0, 1.0], LOCAL_2D)
        self.pipeline_softmax = self.new_pipeline("softmax", opt, [0], LOCAL_1D)
        ok = self.pipeline_proj_q and self.pipeline_proj and self.pipeline_bmm and self.pipeline_softmax
        return 0 if ok else -1

    def upload_model(self, cmd, opt) -> int:
        for name in self._NAMES:
            # (out_features, in_features) row-major: the shader reads W^T through strides
            self.weights_gpu[name] = upload_weights(cmd, np.asarray(self._w[name], np.float32), opt)
            self.biases_gpu[name] = upload_weights(cmd, np.asarray(self._b[name], np.float32), opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weights_gpu = {}
        self.biases_gpu = {}

    def _rows_ok(self, m, name: str, width: int) -> bool:
        if m.dims == 2 and m.elempack == 1 and m.w == width:
            return True
        log.error(
            "MultiHeadAttention %r: %s must be a 2-D blob of rows of %d, got dims %d (w %d h %d)",
            self.name, name, width, m.dims, m.w, m.h,
        )  # fmt: skip
        return False

    def _record_projection(self, cmd, pipeline, x, name: str, out, lane: int, opt) -> None:
        """out = x @ W^T + b (times alpha, the pipeline's): rows of x, weights (N, K)."""
        w = self.weights_gpu[name]
        n, k = self._w[name].shape
        rows = x.h
        out.create(n, rows, elemsize=lane, elempack=1, allocator=opt.blob_vkallocator)
        empty = type(x)()
        constants = [rows, n, k, x.w, 1, 1, k, 2, 0, 1, n, 1, 0, 0, 0, 0]
        bindings = [x, empty, empty, out, empty, w, self.biases_gpu[name]]
        cmd.record_pipeline(pipeline, bindings, constants, (-(-n // 4), rows, 1))

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        n_extra = 1 if self.attn_mask else 0
        n_qkv = len(bottoms) - n_extra
        if not 1 <= n_qkv <= 3 or not tops:
            log.error(
                "MultiHeadAttention %r: got %d inputs; expected 1-3 of q, k, v%s",
                self.name, len(bottoms), " + attn_mask" if self.attn_mask else "",
            )  # fmt: skip
            return -1
        q, k, v = bottoms[0], bottoms[0 if n_qkv == 1 else 1], bottoms[n_qkv - 1]
        if not (
            self._rows_ok(q, "q", self.qdim)
            and self._rows_ok(k, "k", self.kdim)
            and self._rows_ok(v, "v", self.vdim)
        ):
            return -1
        if k.h != v.h:
            log.error("MultiHeadAttention %r: k has %d rows, v %d", self.name, k.h, v.h)
            return -1
        e, heads = self.embed_dim, self.num_heads
        hd = e // heads
        src, dst = q.h, k.h
        lane = q.elemsize
        alloc = opt.blob_vkallocator
        VkMat = type(q)
        empty = VkMat()

        mask, c_mode, c_sm, c_sb = empty, 0, 0, 0
        if self.attn_mask:
            mask = bottoms[n_qkv]
            if mask.dims == 2 and (mask.h, mask.w) == (src, dst):
                c_sm, c_sb = mask.w, 0
            elif mask.dims == 3 and (mask.c, mask.h, mask.w) == (heads, src, dst):
                c_sm, c_sb = mask.w, mask.cstep
            else:
                log.error(
                    "MultiHeadAttention %r: attn_mask (dims %d, c %d h %d w %d) fits neither (%d, %d) nor (%d, %d, %d)",
                    self.name, mask.dims, mask.c, mask.h, mask.w, src, dst, heads, src, dst,
                )  # fmt: skip
                return -1
            if mask.elempack != 1:
                log.error("MultiHeadAttention %r: attn_mask must be elempack 1", self.name)
                return -1
            c_mode = 1

        qq, kk, vv = VkMat(), VkMat(), VkMat()
        self._record_projection(cmd, self.pipeline_proj_q, q, "q", qq, lane, opt)
        self._record_projection(cmd, self.pipeline_proj, k, "k", kk, lane, opt)
        self._record_projection(cmd, self.pipeline_proj, v, "v", vv, lane, opt)

        # scores[h] = qq[:, h] @ kk[:, h]^T (+ mask), a (heads, src, dst) blob
        scores = VkMat()
        scores.create(dst, src, heads, elemsize=lane, elempack=1, allocator=alloc)
        if scores.empty() or qq.empty() or kk.empty() or vv.empty():
            return -100
        constants = [src, dst, hd, e, 1, 1, e, c_mode, c_sm, 1, dst, 1, hd, hd, c_sb, scores.cstep]
        bindings = [qq, kk, mask, scores, empty, empty, empty]
        cmd.record_pipeline(self.pipeline_bmm, bindings, constants, (-(-dst // 4), src, heads))

        constants = [dst, 1, src, heads, 1, scores.cstep]
        cmd.record_pipeline(self.pipeline_softmax, [scores], constants, (src * heads, 1, 1))

        # merged[:, h] = scores[h] @ vv[:, h], a (src, embed_dim) blob
        merged = VkMat()
        merged.create(e, src, elemsize=lane, elempack=1, allocator=alloc)
        if merged.empty():
            return -100
        constants = [src, hd, dst, dst, 1, e, 1, 0, 0, 0, e, 1, scores.cstep, hd, 0, hd]
        bindings = [scores, vv, empty, merged, empty, empty, empty]
        cmd.record_pipeline(self.pipeline_bmm, bindings, constants, (-(-hd // 4), src, heads))

        top = tops[0]
        self._record_projection(cmd, self.pipeline_proj, merged, "out", top, lane, opt)
        return 0 if not top.empty() else -100
