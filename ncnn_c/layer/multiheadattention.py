"""MultiHeadAttention (fp32), as torch.nn.MultiheadAttention with ncnn's blob conventions.

Inputs are 2-D blobs of one row per token: q (src_len, qdim), then optionally k (len, kdim)
and v (len, vdim); one input is self-attention, two share k and v. With ``attn_mask`` a mask
blob follows, (src_len, dst_len) for all heads or (num_heads, src_len, dst_len), added to the
scores before the softmax. With ``kv_cache`` two more inputs carry the projected keys and
values of earlier steps as (embed_dim, past_len) blobs, and two more outputs return the
updated ones: self-attention appends the new tokens, cross-attention reuses a non-empty cache
as it is.

The projections are single BLAS products on weights prepared at load time; the per-head
products are batched matmuls over the heads. q is scaled after its projection (bias
included) by ``scale``, 1/sqrt(embed_dim / num_heads) unless given.
"""

from __future__ import annotations

import logging
import math
from typing import ClassVar

import numpy as np

from ..mat import Mat
from . import Layer, Param, load_weight, param_error
from .deconvolution import flat_weights

log = logging.getLogger("ncnn_c")


class MultiHeadAttention(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "embed_dim", 0),
        Param(1, "num_heads", 1),
        Param(2, "weight_data_size", 0),
        Param(3, "kdim", "embed_dim"),
        Param(4, "vdim", "embed_dim"),
        Param(5, "attn_mask", 0),
        # nan stands for "not given": the default depends on embed_dim and num_heads
        Param(6, "scale", math.nan),
        Param(7, "kv_cache", 0),
        Param(18, "quantize_term", 0),
    )
    embed_dim: int
    num_heads: int
    weight_data_size: int
    kdim: int
    vdim: int
    attn_mask: int
    scale: float
    kv_cache: int
    quantize_term: int

    _NAMES = ("q", "k", "v", "out")

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False
        self.weights: dict[str, Mat] = {}
        self.biases: dict[str, Mat] = {}
        self._w: dict[str, np.ndarray] = {}  # (out_features, in_features) per projection
        self._b: dict[str, np.ndarray] = {}

    @property
    def qdim(self) -> int:
        return self.weight_data_size // self.embed_dim if self.embed_dim > 0 else 0

    def check_params(self) -> int:
        if self.quantize_term:
            log.error(
                "MultiHeadAttention %r: quantized weights (18=%d) are not supported",
                self.name,
                self.quantize_term,
            )
            return -1
        e, h = self.embed_dim, self.num_heads
        if e <= 0 or h <= 0 or e % h:
            return param_error(self, "num_heads", f"does not split embed_dim {e}")
        if self.weight_data_size <= 0 or self.weight_data_size % e or self.kdim <= 0 or self.vdim <= 0:
            log.error(
                "MultiHeadAttention %r: weight_data_size %d, kdim %d, vdim %d do not fit embed_dim %d",
                self.name,
                self.weight_data_size,
                self.kdim,
                self.vdim,
                e,
            )
            return -1
        if math.isnan(self.scale):
            self.scale = 1.0 / math.sqrt(e // h)
        return 0

    def load_model(self, mb) -> int:
        e = self.embed_dim
        shapes = {"q": (e, self.qdim), "k": (e, self.kdim), "v": (e, self.vdim), "out": (self.qdim, e)}
        for name in self._NAMES:
            rows, cols = shapes[name]
            self.weights[name] = load_weight(self, mb, f"{name}_weight_data", rows * cols, 0)
            if self.weights[name].empty():
                return -100
            self.biases[name] = load_weight(self, mb, f"{name}_bias_data", rows, 1)
            if self.biases[name].empty():
                return -100
            self._w[name] = flat_weights(self.weights[name]).reshape(rows, cols)
            self._b[name] = flat_weights(self.biases[name])
        return 0

    def _rows(self, m: Mat, name: str, width: int) -> np.ndarray | None:
        if m.dims != 2 or m.elempack != 1 or m.w != width:
            log.error(
                "MultiHeadAttention %r: %s must be a 2-D fp32 blob of rows of %d, got dims %d shape %s",
                self.name,
                name,
                width,
                m.dims,
                m.tensor().shape,
            )
            return None
        return m.tensor()

    def _project(self, x: np.ndarray, name: str) -> np.ndarray:
        out = x @ self._w[name].T
        out += self._b[name]
        return out

    def forward(self, bottoms, tops, opt) -> int:
        n_extra = (1 if self.attn_mask else 0) + (2 if self.kv_cache else 0)
        n_qkv = len(bottoms) - n_extra
        n_tops = 3 if self.kv_cache else 1
        if not 1 <= n_qkv <= 3 or len(tops) < n_tops:
            log.error(
                "MultiHeadAttention %r: got %d inputs / %d outputs; expected 1-3 of q, k, v%s%s and %d outputs",
                self.name,
                len(bottoms),
                len(tops),
                " + attn_mask" if self.attn_mask else "",
                " + 2 caches" if self.kv_cache else "",
                n_tops,
            )
            return -1
        k_i = 0 if n_qkv == 1 else 1
        v_i = n_qkv - 1
        e = self.embed_dim
        heads = self.num_heads
        hd = e // heads

        q = self._rows(bottoms[0], "q", self.qdim)
        k = self._rows(bottoms[k_i], "k", self.kdim)
        v = self._rows(bottoms[v_i], "v", self.vdim)
        if q is None or k is None or v is None:
            return -1
        if k.shape[0] != v.shape[0]:
            log.error("MultiHeadAttention %r: k has %d rows, v %d", self.name, k.shape[0], v.shape[0])
            return -1
        src_len = q.shape[0]

        # keys / values as (len, embed_dim) rows; caches hold them transposed
        cache_k = cache_v = None
        if self.kv_cache:
            ck, cv = bottoms[n_qkv + n_extra - 2], bottoms[n_qkv + n_extra - 1]
            if not ck.empty():
                if ck.dims != 2 or ck.h != e or cv.dims != 2 or cv.h != e or cv.w != ck.w:
                    log.error(
                        "MultiHeadAttention %r: kv caches must be (embed_dim=%d, past_len) blobs",
                        self.name,
                        e,
                    )
                    return -1
                cache_k, cache_v = ck, cv
        self_attention = k_i == 0
        if cache_k is not None and cache_v is not None and not self_attention:
            kk = cache_k.tensor().T
            vv = cache_v.tensor().T
        else:
            kk = self._project(k, "k")
            vv = self._project(v, "v")
            if cache_k is not None and cache_v is not None:
                kk = np.concatenate([cache_k.tensor().T, kk])
                vv = np.concatenate([cache_v.tensor().T, vv])
        dst_len = kk.shape[0]

        mask = None
        if self.attn_mask:
            mask = bottoms[n_qkv].tensor()
            ok = mask.shape == (src_len, dst_len) or mask.shape == (heads, src_len, dst_len)
            if not ok or bottoms[n_qkv].elempack != 1:
                log.error(
                    "MultiHeadAttention %r: attn_mask of shape %s fits neither (%d, %d) nor (%d, %d, %d)",
                    self.name,
                    mask.shape,
                    src_len,
                    dst_len,
                    heads,
                    src_len,
                    dst_len,
                )
                return -1

        qq = self._project(q, "q")
        qq *= np.float32(self.scale)
        # (heads, len, head_dim) views of the projections
        qh = qq.reshape(src_len, heads, hd).transpose(1, 0, 2)
        kh = kk.reshape(dst_len, heads, hd).transpose(1, 2, 0)
        vh = vv.reshape(dst_len, heads, hd).transpose(1, 0, 2)
        scores = np.matmul(qh, kh)
        if mask is not None:
            scores += mask
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        merged = np.matmul(scores, vh).transpose(1, 0, 2).reshape(src_len, e)

        top = tops[0]
        top.create(self.qdim, src_len, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = np.matmul(merged, self._w["out"].T, out=top.tensor())
        out += self._b["out"]

        if self.kv_cache:
            if cache_k is not None and cache_v is not None and not self_attention:
                tops[1].share_from(cache_k)
                tops[2].share_from(cache_v)
            else:
                for t, rows in ((tops[1], kk), (tops[2], vv)):
                    t.create(dst_len, e, elemsize=4, elempack=1, allocator=opt.blob_allocator)
                    if t.empty():
                        return -100
                    t.tensor()[...] = rows.T
        return 0
