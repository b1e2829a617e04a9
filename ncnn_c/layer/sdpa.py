"""SDPA (fp32): scaled dot-product attention over per-head blobs, as ncnn's.

Inputs: q (num_heads, src_len, embed_dim), k (num_group, cur_len, embed_dim),
v (num_group, cur_len, out_embed_dim); heads share k and v in groups of
num_heads / num_group (grouped-query attention); a 2-D blob is one head. With ``attn_mask``
a mask follows, added to the scaled scores: (src_len, dst_len), or one per head or one for all
as (num_heads or 1, src_len, dst_len). With ``kv_cache`` two more inputs carry the keys and
values of earlier steps, (num_group, past_len, embed_dim) and (num_group, past_len,
out_embed_dim), an empty blob meaning none, and two more outputs return them with this step's
appended along the sequence axis (ncnn's kvcache.md: SDPA keeps the standard layout).
The output is (num_heads, src_len, out_embed_dim); ``scale`` 0 means 1 / sqrt(embed_dim). A
query row the mask hides from every key gives 0, and an empty q, k or v -100, as in ncnn.
"""

from __future__ import annotations

import logging
import math
from typing import ClassVar

import numpy as np

from ..mat import Mat
from . import Layer, Param
from ._blob import store_array

log = logging.getLogger("ncnn_c")

# query rows up to which the products run in einsum's loops instead of BLAS (forward)
FEW_ROWS = 4
FLT_MAX = np.float32(np.finfo(np.float32).max)


class SDPA(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(5, "attn_mask", 0),
        Param(6, "scale", 0.0),
        Param(7, "kv_cache", 0),
        Param(18, "int8_scale_term", 0),
    )
    attn_mask: int
    scale: float
    kv_cache: int
    int8_scale_term: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        if self.int8_scale_term:
            log.error(
                "SDPA %r: int8_scale_term 18=%d: int8 attention is not supported",
                self.name,
                self.int8_scale_term,
            )
            return -1
        return 0

    def _heads(self, m: Mat, what: str) -> np.ndarray | None:
        """A (heads, len, dim) view of a 2-D or 3-D blob."""
        if m.dims not in (2, 3) or m.elempack != 1:
            log.error(
                "SDPA %r: %s must be a (heads, len, dim) fp32 blob, got dims %d shape %s",
                self.name,
                what,
                m.dims,
                m.tensor().shape,
            )
            return None
        t = m.tensor()
        return t[None] if m.dims == 2 else t

    def _bad(self, message: str, *args) -> int:
        log.error("SDPA %r: " + message, self.name, *args)
        return -1

    def forward(self, bottoms, tops, opt) -> int:
        n_in = 3 + (1 if self.attn_mask else 0) + (2 if self.kv_cache else 0)
        n_out = 3 if self.kv_cache else 1
        if len(bottoms) != n_in or len(tops) < n_out:
            return self._bad(
                "got %d inputs / %d outputs; expected q, k, v%s%s and %d outputs",
                len(bottoms),
                len(tops),
                " + attn_mask" if self.attn_mask else "",
                " + 2 kv caches" if self.kv_cache else "",
                n_out,
            )
        for m, what in zip(bottoms[:3], ("q", "k", "v"), strict=True):
            if m.empty():
                self._bad(
                    "%s is empty (c x h x w %d x %d x %d): no tokens to attend with", what, m.c, m.h, m.w
                )
                return -100  # as ncnn, whose output (or scores) of no tokens cannot be allocated
        q = self._heads(bottoms[0], "q")
        k = self._heads(bottoms[1], "k")
        v = self._heads(bottoms[2], "v")
        if q is None or k is None or v is None:
            return -1
        heads, src_len, embed_dim = q.shape
        groups, cur_len = k.shape[:2]
        if k.shape[2] != embed_dim or v.shape[:2] != (groups, cur_len) or heads % groups:
            return self._bad(
                "q %s, k %s and v %s do not fit (heads, len, dim) attention with heads a multiple of k's groups",
                q.shape,
                k.shape,
                v.shape,
            )
        out_dim = v.shape[2]

        key_mat, value_mat = bottoms[1], bottoms[2]
        if self.kv_cache:
            past_k, past_v = bottoms[n_in - 2], bottoms[n_in - 1]
            if not past_k.empty() and past_k.h > 0:
                pk = self._heads(past_k, "past key")
                pv = self._heads(past_v, "past value")
                if pk is None or pv is None:
                    return -1
                past_len = pk.shape[1]
                if pk.shape != (groups, past_len, embed_dim) or pv.shape != (groups, past_len, out_dim):
                    return self._bad(
                        "kv caches %s and %s do not fit k %s and v %s", pk.shape, pv.shape, k.shape, v.shape
                    )
                key_mat, value_mat = Mat(), Mat()
                for m, past, cur in ((key_mat, pk, k), (value_mat, pv, v)):
                    m.create(
                        cur.shape[2], past_len + cur_len, groups, elemsize=4, allocator=opt.blob_allocator
                    )
                    if m.empty():
                        return -100
                    np.concatenate([past, cur], axis=1, out=m.tensor())
                k = key_mat.tensor()
                v = value_mat.tensor()
        dst_len = k.shape[1]

        mask = None
        if self.attn_mask:
            m = bottoms[3]
            mask = m.tensor()
            ok = m.elempack == 1 and (
                (m.dims == 2 and mask.shape == (src_len, dst_len))
                or (m.dims == 3 and mask.shape[0] in (1, heads) and mask.shape[1:] == (src_len, dst_len))
            )
            if not ok:
                return self._bad(
                    "attn_mask of shape %s fits neither (%d, %d) nor (%d or 1, %d, %d)",
                    mask.shape,
                    src_len,
                    dst_len,
                    heads,
                    src_len,
                    dst_len,
                )

        scale = self.scale if self.scale != 0.0 else 1.0 / math.sqrt(embed_dim)
        per_group = heads // groups
        # (groups, heads per group, len, dim): each head meets its group's keys and values.
        # A few query rows (a decode step) take einsum's own loops, not BLAS: OpenBLAS's
        # workers, once a product wakes them, spin and take the cores from the native plan's
        # OpenMP threads between the SDPA layers (a 2-thread decode ran 10x slower); a
        # prefill's products are large enough for BLAS to pay
        few = src_len <= FEW_ROWS
        qg = q.reshape(groups, per_group, src_len, embed_dim)
        if few:
            scores = np.einsum("gpsd,gld->gpsl", qg, k).reshape(heads, src_len, dst_len)
        else:
            scores = np.matmul(qg, k[:, None].swapaxes(-1, -2)).reshape(heads, src_len, dst_len)
        scores *= np.float32(scale)
        if mask is not None:
            scores += mask
        # the max from -FLT_MAX, as ncnn's softmax: a row the mask hides wholly (-inf) gives
        # exp(-inf) = 0 everywhere, and ncnn's SDPA gives that row 0, not 0 / 0
        scores -= np.maximum(scores.max(axis=-1, keepdims=True), -FLT_MAX)
        np.exp(scores, out=scores)
        sums = scores.sum(axis=-1, keepdims=True)
        np.divide(scores, sums, out=scores, where=sums != 0)

        probs = scores.reshape(groups, per_group, src_len, dst_len)
        out = np.einsum("gpsl,gld->gpsd", probs, v) if few else np.matmul(probs, v[:, None])
        if store_array(tops[0], out.reshape(heads, src_len, out_dim), opt) != 0:
            return -100

        if self.kv_cache:
            tops[1].share_from(key_mat)
            tops[2].share_from(value_mat)
        return 0
