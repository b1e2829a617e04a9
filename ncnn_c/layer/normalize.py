"""Normalize: divide by the L2 norm over the whole blob, each channel, or each position; then scale.

``across_spatial`` and ``across_channel`` pick the norm: both = one norm for the blob, spatial
only = one per channel, channel only = one per spatial position (over the channels); with
neither the blob passes through unchanged, as in ncnn. ``eps_mode`` says where eps enters
(0: 1/sqrt(s + eps), 1: 1/max(sqrt(s), eps), 2: 1/sqrt(max(s, eps))). ``scale_data``
(raw fp32) is one value shared by all channels or one per channel. 1-D and 2-D blobs are
one channel.

ncnn's own default for ``across_channel`` is 1 (normalize.cpp and the PyPI build agree),
although operators.md lists 0; the table follows ncnn so that models behave the same.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param, load_weight, param_error

log = logging.getLogger("ncnn_c")


class Normalize(Layer):
    # set by load_param from PARAMS; declared for the type checker
    across_spatial: int
    channel_shared: int
    eps: float
    scale_data_size: int
    across_channel: int
    eps_mode: int

    PARAMS = (
        Param(0, "across_spatial", 0),
        Param(1, "channel_shared", 0),
        Param(2, "eps", 0.0001),
        Param(3, "scale_data_size", 0),
        Param(4, "across_channel", 1),
        Param(9, "eps_mode", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.scale_data = np.zeros(0, np.float32)

    def check_params(self) -> int:
        if self.scale_data_size < 1:
            return param_error(self, "scale_data_size", "must be positive (no scale data)")
        if self.eps_mode not in (0, 1, 2):
            log.error("Normalize %r: unknown eps_mode %d", self.name, self.eps_mode)
            return -1
        return 0

    def load_model(self, mb) -> int:
        m = load_weight(self, mb, "scale_data", self.scale_data_size, 1)
        if m.empty():
            return -100
        self.scale_data = np.array(m.tensor(), dtype=np.float32).ravel()
        return 0

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        if not self._accepts(bottom):
            return -1
        top.create_like(bottom, opt.blob_allocator)
        if top.empty():
            return -100
        self._normalize(bottom.tensor(), top.tensor(), bottom.c)
        return 0

    def forward_inplace(self, bottom_top: Mat, opt) -> int:
        if not self._accepts(bottom_top):
            return -1
        t = bottom_top.tensor()
        self._normalize(t, t, bottom_top.c)
        return 0

    def _accepts(self, m: Mat) -> bool:
        if not 1 <= m.dims <= 4 or m.elempack != 1:
            log.error(
                "Normalize %r: needs an fp32 blob, got dims %d elempack %d", self.name, m.dims, m.elempack
            )
            return False
        if not self.channel_shared and self.scale_data.size < m.c:
            log.error(
                "Normalize %r: %d scale values for a blob of %d channels",
                self.name,
                self.scale_data.size,
                m.c,
            )
            return False
        return True

    def _inv_norm(self, ssum: np.ndarray) -> np.ndarray:
        eps = np.float32(self.eps)
        if self.eps_mode == 0:
            d = np.sqrt(ssum + eps)
        elif self.eps_mode == 1:
            d = np.maximum(np.sqrt(ssum), eps)
        else:
            d = np.sqrt(np.maximum(ssum, eps))
        return (np.float32(1.0) / d).astype(np.float32)

    def _normalize(self, src: np.ndarray, dst: np.ndarray, c: int) -> None:
        x = src.reshape(c, -1)
        y = dst.reshape(c, -1)
        assert np.may_share_memory(y, dst)
        if not self.across_spatial and not self.across_channel:
            if src is not dst:
                y[...] = x
            return
        scale = self.scale_data[:1] if self.channel_shared else self.scale_data[:c]
        if self.across_spatial:
            per_channel = np.einsum("cs,cs->c", x, x)
            ssum = per_channel.sum(dtype=np.float32, keepdims=True) if self.across_channel else per_channel
            factor = self._inv_norm(ssum) * scale
            np.multiply(x, factor[:, None], out=y)
        else:
            a = self._inv_norm(np.einsum("cs,cs->s", x, x))
            np.multiply(x, a[None, :], out=y)
            y *= scale[:, None]
