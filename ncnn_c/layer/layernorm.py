"""LayerNorm: normalise the innermost ``affine_size`` values of every slice, then scale/shift.

ncnn picks the slice per dims from ``affine_size``: a 1-D blob or each row of a 2-D blob;
for 3-D each row when ``affine_size == w``, else each channel (``w*h``); for 4-D each row
(``== w``), each depth plane (``== w*h``), else each channel (``w*h*d``). ``gamma``/``beta``
(``affine_size`` raw fp32 values) multiply element-wise, so with ``affine`` the chosen slice
length must be ``affine_size``.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param, param_error
from ._elementwise import load_vector

log = logging.getLogger("ncnn_c")


class LayerNorm(Layer):
    # set by load_param from PARAMS; declared for the type checker
    affine_size: int
    eps: float
    affine: int

    PARAMS = (
        Param(0, "affine_size", 0),
        Param(1, "eps", 0.001),
        Param(2, "affine", 1),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.gamma_data = np.zeros(0, np.float32)
        self.beta_data = np.zeros(0, np.float32)

    def check_params(self) -> int:
        if self.affine and self.affine_size < 1:
            return param_error(self, "affine_size", "must be positive with affine (its gamma and beta)")
        return 0

    def load_model(self, mb) -> int:
        if not self.affine:
            return 0
        gamma = load_vector(self, mb, self.affine_size, "gamma")
        beta = load_vector(self, mb, self.affine_size, "beta") if gamma is not None else None
        if gamma is None or beta is None:
            return -100
        self.gamma_data, self.beta_data = gamma, beta
        return 0

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        n = self._slice_len(bottom)
        if n < 0:
            return -1
        top.create_like(bottom, opt.blob_allocator)
        if top.empty():
            return -100
        self._norm(bottom.tensor(), top.tensor(), n)
        return 0

    def forward_inplace(self, bottom_top: Mat, opt) -> int:
        n = self._slice_len(bottom_top)
        if n < 0:
            return -1
        t = bottom_top.tensor()
        self._norm(t, t, n)
        return 0

    def _slice_len(self, m: Mat) -> int:
        """How many innermost values form one normalised slice; -1 (logged) if unusable."""
        if not 1 <= m.dims <= 4 or m.elempack != 1:
            log.error(
                "LayerNorm %r: needs an fp32 blob, got dims %d elempack %d", self.name, m.dims, m.elempack
            )
            return -1
        w, plane, volume = m.w, m.w * m.h, m.w * m.h * m.d
        if m.dims <= 2 or self.affine_size == w:
            n = w
        elif m.dims == 3 or self.affine_size != plane:
            n = plane if m.dims == 3 else volume
        else:
            n = plane
        if self.affine and n != self.affine_size:
            log.error(
                "LayerNorm %r: affine_size %d does not match the blob (dims %d, w %d h %d d %d)",
                self.name,
                self.affine_size,
                m.dims,
                m.w,
                m.h,
                m.d,
            )
            return -1
        return n

    def _norm(self, src: np.ndarray, dst: np.ndarray, n: int) -> None:
        # slices are innermost and contiguous, so (slices, n) views the blob channel by channel
        x = src.reshape(-1, n) if src.ndim <= 2 else src.reshape(src.shape[0], -1, n)
        y = dst.reshape(x.shape)
        assert np.may_share_memory(y, dst)
        nf = np.float32(n)
        mean = x.sum(axis=-1, dtype=np.float32, keepdims=True) / nf
        centred = x - mean
        var = np.einsum("...s,...s->...", centred, centred)[..., None] / nf
        a = (np.float32(1.0) / np.sqrt(var + np.float32(self.eps))).astype(np.float32)
        np.multiply(centred, a, out=y)
        if self.affine:
            y *= self.gamma_data
            y += self.beta_data
