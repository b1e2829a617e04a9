"""InstanceNorm: normalise every channel on its own to zero mean / unit variance, then scale/shift.

A channel is all ``w*h*d`` values of ``c``; 1-D and 2-D blobs are one channel, as ncnn's
Mat gives ``c == 1`` for them. ``gamma``/``beta`` (per channel, raw fp32) apply only with
``affine``, and then the blob must have exactly ``channels`` channels.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param, param_error
from ._elementwise import load_vector

log = logging.getLogger("ncnn_c")


def _channel_rows(t: np.ndarray, dims: int) -> np.ndarray:
    """``t`` as (channels, values): a view, since a channel's values are contiguous."""
    v = t.reshape(1, -1) if dims <= 2 else t.reshape(t.shape[0], -1)
    assert np.may_share_memory(v, t)
    return v


class InstanceNorm(Layer):
    # set by load_param from PARAMS; declared for the type checker
    channels: int
    eps: float
    affine: int

    PARAMS = (
        Param(0, "channels", 0),
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
        if self.affine and self.channels < 1:
            return param_error(self, "channels", "must be positive with affine (its gamma and beta)")
        return 0

    def load_model(self, mb) -> int:
        if not self.affine:
            return 0
        gamma = load_vector(self, mb, self.channels, "gamma")
        beta = load_vector(self, mb, self.channels, "beta") if gamma is not None else None
        if gamma is None or beta is None:
            return -100
        self.gamma_data, self.beta_data = gamma, beta
        return 0

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        if not self._accepts(bottom):
            return -1
        top.create_like(bottom, opt.blob_allocator)
        if top.empty():
            return -100
        self._norm(bottom.tensor(), top.tensor(), bottom.dims)
        return 0

    def forward_inplace(self, bottom_top: Mat, opt) -> int:
        if not self._accepts(bottom_top):
            return -1
        t = bottom_top.tensor()
        self._norm(t, t, bottom_top.dims)
        return 0

    def _accepts(self, m: Mat) -> bool:
        if not 1 <= m.dims <= 4 or m.elempack != 1:
            log.error(
                "InstanceNorm %r: needs an fp32 blob, got dims %d elempack %d", self.name, m.dims, m.elempack
            )
            return False
        if self.affine and m.c != self.channels:
            log.error(
                "InstanceNorm %r: blob has %d channels, gamma/beta have %d", self.name, m.c, self.channels
            )
            return False
        return True

    def _norm(self, src: np.ndarray, dst: np.ndarray, dims: int) -> None:
        x = _channel_rows(src, dims)
        y = _channel_rows(dst, dims)
        n = np.float32(x.shape[1])
        mean = x.sum(axis=1, dtype=np.float32) / n
        centred = x - mean[:, None]
        var = np.einsum("cs,cs->c", centred, centred) / n
        a = (np.float32(1.0) / np.sqrt(var + np.float32(self.eps))).astype(np.float32)
        if self.affine:
            a = a * self.gamma_data
            b = -mean * a + self.beta_data
        else:
            b = -mean * a
        np.multiply(x, a[:, None], out=y)
        y += b[:, None]
