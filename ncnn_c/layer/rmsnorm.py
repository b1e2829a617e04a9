"""RMSNorm: scale each slice of the blob by 1 / sqrt(mean(x^2) + eps), then by ``gamma``.

The slice is ncnn's (LayerNorm's rule): a 1-D blob or each row of a 2-D blob; for 3-D each
row when ``affine_size`` (param 0) equals w, else each channel; for 4-D each row (== w), each
depth plane (== w*h), else each channel. ``eps`` (param 1, default 0.001); with ``affine``
(param 2, on by default) ``affine_size`` raw fp32 gamma values multiply element-wise, so the
slice must hold ``affine_size`` values. y = (x * a) * gamma, in ncnn's order.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param
from ._elementwise import load_vector

log = logging.getLogger("ncnn_c")


class RMSNorm(Layer):
    PARAMS = (Param(0, "affine_size", 0), Param(1, "eps", 0.001), Param(2, "affine", 1))
    affine_size: int
    eps: float
    affine: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.gamma_data = np.zeros(0, np.float32)

    def check_params(self) -> int:
        if self.affine and self.affine_size < 1:
            log.error("RMSNorm %r: affine_size %d must be >= 1 with affine", self.name, self.affine_size)
            return -1
        return 0

    def load_model(self, mb) -> int:
        if not self.affine:
            return 0
        gamma = load_vector(self, mb, self.affine_size, "gamma")
        if gamma is None:
            return -100
        self.gamma_data = gamma
        return 0

    def _slice_len(self, m) -> int:
        """Values per normalised slice; -1 (logged) when the blob cannot be normalised."""
        if not 1 <= m.dims <= 4 or m.elempack != 1 or m.elemsize != 4:
            log.error("RMSNorm %r: needs a 1-4 D fp32 blob, got dims %d", self.name, m.dims)
            return -1
        w, plane = m.w, m.w * m.h
        if m.dims <= 2 or self.affine_size == w:
            n = w
        elif m.dims == 4 and self.affine_size == plane:
            n = plane
        else:
            n = plane * m.d
        if self.affine and n != self.affine_size:
            log.error(
                "RMSNorm %r: affine_size %d does not match the blob (dims %d, w %d h %d d %d)",
                self.name, self.affine_size, m.dims, m.w, m.h, m.d,
            )  # fmt: skip
            return -1
        return n

    def _norm(self, src: np.ndarray, dst: np.ndarray, n: int) -> None:
        # slices are innermost and contiguous within a channel: (channels, slices, n) views
        x = src.reshape(-1, n) if src.ndim <= 2 else src.reshape(src.shape[0], -1, n)
        y = dst.reshape(x.shape)
        sqsum = np.einsum("...s,...s->...", x, x)[..., None]
        a = np.float32(1.0) / np.sqrt(sqsum / np.float32(n) + np.float32(self.eps))
        np.multiply(x, a, out=y)
        if self.affine:
            y *= self.gamma_data

    def forward(self, bottom, top, opt) -> int:
        n = self._slice_len(bottom)
        if n < 0:
            return -1
        top.create_like(bottom, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        self._norm(bottom.tensor(), top.tensor(), n)
        return 0

    def forward_inplace(self, bottom_top, opt) -> int:
        n = self._slice_len(bottom_top)
        if n < 0:
            return -1
        t = bottom_top.tensor()
        self._norm(t, t, n)
        return 0
