"""LRN: local response normalisation, ``y = x * (bias + alpha / n * sum(x^2 over a window))^-beta``.

region_type 0 sums over local_size neighbouring channels starting at ``q - local_size/2``
(integer half; for an even size the window leans back, as the PyPI ncnn build does), with
``n = local_size``; region_type 1 sums a local_size x local_size spatial window placed the
same way on each axis (zero-padded), with ``n = local_size^2``. 1-D and 2-D blobs are a single channel. ncnn ignores
the depth of a 4-D blob here, so 4-D is refused rather than half-normalised.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param

log = logging.getLogger("ncnn_c")


class LRN(Layer):
    # set by load_param from PARAMS; declared for the type checker
    region_type: int
    local_size: int
    alpha: float
    beta: float
    bias: float

    PARAMS = (
        Param(0, "region_type", 0),
        Param(1, "local_size", 5),
        Param(2, "alpha", 1.0),
        Param(3, "beta", 0.75),
        Param(4, "bias", 1.0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True

    def check_params(self) -> int:
        if self.region_type not in (0, 1):
            log.error("LRN %r: unknown region_type %d", self.name, self.region_type)
            return -1
        if self.local_size <= 0:
            log.error("LRN %r: local_size %d must be positive", self.name, self.local_size)
            return -1
        return 0

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        if not self._accepts(bottom):
            return -1
        top.create_like(bottom, opt.blob_allocator)
        if top.empty():
            return -100
        self._lrn(bottom.tensor(), top.tensor())
        return 0

    def forward_inplace(self, bottom_top: Mat, opt) -> int:
        if not self._accepts(bottom_top):
            return -1
        t = bottom_top.tensor()
        self._lrn(t, t)
        return 0

    def _accepts(self, m: Mat) -> bool:
        if not 1 <= m.dims <= 3 or m.elempack != 1:
            log.error(
                "LRN %r: needs a 1-D..3-D fp32 blob, got dims %d elempack %d", self.name, m.dims, m.elempack
            )
            return False
        return True

    def _lrn(self, src: np.ndarray, dst: np.ndarray) -> None:
        c = src.shape[0] if src.ndim == 3 else 1
        h = src.shape[-2] if src.ndim >= 2 else 1
        w = src.shape[-1]
        x = src.reshape(c, h, w)
        y = dst.reshape(x.shape)
        assert np.may_share_memory(y, dst)
        sq = np.square(x)
        ls = self.local_size
        half = ls // 2
        ss = np.zeros_like(sq)
        if self.region_type == 0:
            # one pass per channel offset in the window, clipped at both ends
            for off in range(-half, ls - half):
                lo, hi = max(0, -off), min(c, c - off)
                if lo < hi:
                    ss[lo:hi] += sq[lo + off : hi + off]
            n = ls
        else:
            # separable window sums: rows of the zero-padded squares, then columns
            before = half
            padded = np.zeros((c, h + ls - 1, w + ls - 1), np.float32)
            padded[:, before : before + h, before : before + w] = sq
            rows = np.zeros((c, h + ls - 1, w), np.float32)
            for k in range(ls):
                rows += padded[:, :, k : k + w]
            for k in range(ls):
                ss += rows[:, k : k + h]
            n = ls * ls
        ss *= np.float32(self.alpha / n)
        ss += np.float32(self.bias)
        np.power(ss, np.float32(-self.beta), out=ss)
        np.multiply(x, ss, out=y)
