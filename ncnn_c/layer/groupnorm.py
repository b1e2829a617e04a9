"""GroupNorm: normalise each group of channels to zero mean / unit variance, then scale and shift.

Which axis holds the "channels" follows ncnn's rules per dims: a 1-D blob is ``w`` channels
of one value each, a 2-D blob is ``h`` channels of ``w`` values (rows), 3-D and 4-D blobs are
``c`` channels of ``w*h*d`` values. ``gamma``/``beta`` (per channel, raw fp32) apply only
with ``affine``. ``channels`` must divide by ``group`` (ncnn's x86 layer refuses the param
otherwise).
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param
from ._elementwise import load_vector

log = logging.getLogger("ncnn_c")


def _channel_rows(t: np.ndarray) -> np.ndarray:
    """``t`` as (channels, values) per ncnn's per-dims rule; a view, never a copy."""
    if t.ndim == 1:
        v = t.reshape(t.shape[0], 1)
    else:
        # the values of one channel are contiguous, so merging them keeps a view
        v = t.reshape(t.shape[0], -1)
    assert np.may_share_memory(v, t)
    return v


class GroupNorm(Layer):
    # set by load_param from PARAMS; declared for the type checker
    group: int
    channels: int
    eps: float
    affine: int

    PARAMS = (
        Param(0, "group", 1),
        Param(1, "channels", 0),
        Param(2, "eps", 0.001),
        Param(3, "affine", 1),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.gamma_data = np.zeros(0, np.float32)
        self.beta_data = np.zeros(0, np.float32)

    def check_params(self) -> int:
        if self.group <= 0 or self.channels <= 0 or self.channels % self.group:
            log.error("GroupNorm %r: group %d does not fit channels %d", self.name, self.group, self.channels)
            return -1
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
        self._norm(bottom.tensor(), top.tensor())
        return 0

    def forward_inplace(self, bottom_top: Mat, opt) -> int:
        if not self._accepts(bottom_top):
            return -1
        t = bottom_top.tensor()
        self._norm(t, t)
        return 0

    def _accepts(self, m: Mat) -> bool:
        # the channel axis per dims: w for 1-D, h for 2-D, c otherwise
        n = (m.w, m.h, m.c, m.c)[m.dims - 1] if 1 <= m.dims <= 4 else -1
        if n != self.channels or m.elempack != 1:
            log.error(
                "GroupNorm %r: blob dims %d with %d channels (elempack %d), expected %d channels",
                self.name,
                m.dims,
                n,
                m.elempack,
                self.channels,
            )
            return False
        return True

    def _norm(self, src: np.ndarray, dst: np.ndarray) -> None:
        cg = self.channels // self.group
        x = _channel_rows(src)
        y = _channel_rows(dst)
        xg = x.reshape(self.group, cg, x.shape[1])
        n = cg * x.shape[1]
        mean = xg.sum(axis=(1, 2), dtype=np.float32) / np.float32(n)
        centred = xg - mean[:, None, None]
        var = np.einsum("gcs,gcs->g", centred, centred) / np.float32(n)
        a = (np.float32(1.0) / np.sqrt(var + np.float32(self.eps))).astype(np.float32)
        # (x - mean) * a, then the per-channel affine, as one scale and one shift per channel
        scale = np.repeat(a, cg)
        shift = np.repeat(-mean * a, cg)
        if self.affine:
            shift = shift * self.gamma_data + self.beta_data
            scale = scale * self.gamma_data
        np.multiply(x, scale[:, None], out=y)
        y += shift[:, None]
