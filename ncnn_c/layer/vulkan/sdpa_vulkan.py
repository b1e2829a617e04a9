"""SDPA on the GPU, with the attention mask and the kv cache: two products of matmul.comp
(MatMul's shader) around softmax.comp, plus two copies per cache.

scores = scale * q @ k^T (+ mask), one (heads, src_len, dst_len) blob; each row's softmax in
place; out = scores @ v. The heads are the two batch axes of matmul.comp, (group, head in the
group), so a group's k and v serve its heads through a zero stride (grouped-query attention)
with no copy. With ``kv_cache`` the past and current keys (values) are joined along the
sequence axis by copyto.comp (Concat's shader) into the cache outputs, which the products
then read; an empty past passes k and v through as the caches, as on the CPU.

Elempack 1 (the net unpacks packed q, k, v): the products read every operand through
strides, and decode steps (one query row) are too small for a packed form to pay.
"""

from __future__ import annotations

import logging
import math

from ..sdpa import SDPA
from . import LOCAL_1D, LOCAL_2D, VulkanLayer

log = logging.getLogger("ncnn_c")


def _heads(m) -> tuple[int, int, int, int]:
    """(heads, len, dim, head stride) of a 2-D (one head) or 3-D blob."""
    if m.dims == 2:
        return 1, m.h, m.w, m.w * m.h
    return m.c, m.h, m.w, m.cstep


class SDPA_vulkan(VulkanLayer, SDPA):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False
        self.pipeline_matmul = None
        self.pipeline_softmax = None
        self.pipeline_copyto = None

    def create_pipeline_vk(self, opt) -> int:
        self.pipeline_matmul = self.new_pipeline("matmul", opt, [], LOCAL_2D)
        # [1]: a query row the mask hides from every key gives 0, as ncnn's SDPA
        self.pipeline_softmax = self.new_pipeline("softmax", opt, [1], LOCAL_1D)
        ok = self.pipeline_matmul and self.pipeline_softmax
        if self.kv_cache:
            self.pipeline_copyto = self.new_pipeline("copyto", opt, [], LOCAL_2D)
            ok = ok and self.pipeline_copyto
        return 0 if ok else -1

    def _blob_ok(self, m, what: str) -> bool:
        if m.dims in (2, 3) and m.elempack == 1:
            return True
        log.error(
            "SDPA %r: %s must be a (heads, len, dim) elempack 1 blob, got dims %d (w %d h %d c %d) elempack %d",
            self.name, what, m.dims, m.w, m.h, m.c, m.elempack,
        )  # fmt: skip
        return False

    def _join(self, cmd, past, cur, top, opt) -> int:
        """``top`` = ``past`` and ``cur`` (same heads and dim) joined along the sequence."""
        groups, past_len, dim, _ = _heads(past)
        cur_len = cur.h
        top.create(
            dim, past_len + cur_len, groups, elemsize=cur.elemsize, elempack=1, allocator=opt.blob_vkallocator
        )
        if top.empty():
            return -100
        for src, offset in ((past, 0), (cur, past_len)):
            g, rows, w, cstep = _heads(src)
            constants = [w, rows, 1, g, cstep, top.w, top.h, top.cstep, 0, offset, 0, 0, 0]
            cmd.record_pipeline(self.pipeline_copyto, [src, top], constants, (w, rows, g))
        return 0

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        n_in = 3 + (1 if self.attn_mask else 0) + (2 if self.kv_cache else 0)
        n_out = 3 if self.kv_cache else 1
        if len(bottoms) != n_in or len(tops) < n_out:
            return self._bad(
                "got %d inputs / %d outputs; expected q, k, v%s%s and %d outputs",
                len(bottoms), len(tops), " + attn_mask" if self.attn_mask else "",
                " + 2 kv caches" if self.kv_cache else "", n_out,
            )  # fmt: skip
        q, k, v = bottoms[:3]
        if not (self._blob_ok(q, "q") and self._blob_ok(k, "k") and self._blob_ok(v, "v")):
            return -1
        heads, src_len, embed_dim, q_cs = _heads(q)
        groups, cur_len, k_dim, _ = _heads(k)
        v_groups, v_len, out_dim, _ = _heads(v)
        if k_dim != embed_dim or (v_groups, v_len) != (groups, cur_len) or heads % groups:
            return self._bad(
                "q (%d, %d, %d), k (%d, %d, %d) and v (%d, %d, %d) do not fit (heads, len, dim) attention "
                "with heads a multiple of k's groups",
                heads, src_len, embed_dim, groups, cur_len, k_dim, v_groups, v_len, out_dim,
            )  # fmt: skip

        if self.kv_cache:
            past_k, past_v = bottoms[n_in - 2], bottoms[n_in - 1]
            if past_k.empty() or past_k.h == 0:
                tops[1].share_from(k)
                tops[2].share_from(v)
            else:
                if not (self._blob_ok(past_k, "past key") and self._blob_ok(past_v, "past value")):
                    return -1
                pk, pv = _heads(past_k), _heads(past_v)
                if pk[:3] != (groups, pk[1], embed_dim) or pv[:3] != (groups, pk[1], out_dim):
                    return self._bad(
                        "kv caches (%d, %d, %d) and (%d, %d, %d) do not fit k (%d, %d, %d) and v (%d, %d, %d)",
                        *pk[:3], *pv[:3], groups, cur_len, embed_dim, groups, cur_len, out_dim,
                    )  # fmt: skip
                for past, cur, top in ((past_k, k, tops[1]), (past_v, v, tops[2])):
                    ret = self._join(cmd, past, cur, top, opt)
                    if ret != 0:
                        return ret
            k, v = tops[1], tops[2]
        _, dst_len, _, k_cs = _heads(k)
        v_cs = _heads(v)[3]
        per_group = heads // groups

        empty = type(q)()
        mask, c_mode, c_sm, c_sc, c_sd = empty, 0, 0, 0, 0
        if self.attn_mask:
            mask = bottoms[3]
            mh = mask.c if mask.dims == 3 else 1
            ok = (
                mask.elempack == 1
                and mask.dims in (2, 3)
                and (mask.h, mask.w) == (src_len, dst_len)
                and mh in (1, heads)
            )
            if not ok:
                return self._bad(
                    "attn_mask (dims %d, c %d h %d w %d) fits neither (%d, %d) nor (%d or 1, %d, %d)",
                    mask.dims, mask.c, mask.h, mask.w, src_len, dst_len, heads, src_len, dst_len,
                )  # fmt: skip
            c_mode, c_sm = 1, mask.w
            if mh > 1:
                c_sc, c_sd = per_group * mask.cstep, mask.cstep

        lane = q.elemsize
        alloc = opt.blob_vkallocator
        scores = type(q)()
        scores.create(dst_len, src_len, heads, elemsize=lane, elempack=1, allocator=alloc)
        if scores.empty():
            return -100
        s_cs = scores.cstep
        scale = self.scale if self.scale != 0.0 else 1.0 / math.sqrt(embed_dim)
        # scores[g, j] = scale * q[g * per_group + j] @ k[g]^T (+ mask)
        constants: list[int | float] = [src_len, dst_len, embed_dim, per_group]
        constants += [embed_dim, 1, per_group * q_cs, q_cs]
        constants += [1, embed_dim, k_cs, 0]
        constants += [c_mode, c_sm, 1, c_sc, c_sd]
        constants += [dst_len, 1, per_group * s_cs, s_cs, float(scale)]
        grid = (-(-dst_len // 4), src_len, heads)
        cmd.record_pipeline(self.pipeline_matmul, [q, k, mask, scores], constants, grid)

        constants = [dst_len, 1, src_len, heads, 1, s_cs]
        cmd.record_pipeline(self.pipeline_softmax, [scores], constants, (src_len * heads, 1, 1))

        top = tops[0]
        top.create(out_dim, src_len, heads, elemsize=lane, elempack=1, allocator=alloc)
        if top.empty():
            return -100
        o_cs = top.cstep
        # out[g, j] = scores[g, j] @ v[g]
        constants = [src_len, out_dim, dst_len, per_group]
        constants += [dst_len, 1, per_group * s_cs, s_cs]
        constants += [out_dim, 1, v_cs, 0]
        constants += [0, 0, 0, 0, 0]
        constants += [out_dim, 1, per_group * o_cs, o_cs, 1.0]
        grid = (-(-out_dim // 4), src_len, heads)
        cmd.record_pipeline(self.pipeline_matmul, [scores, v, empty, top], constants, grid)
        return 0
