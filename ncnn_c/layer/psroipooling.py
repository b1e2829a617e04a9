"""PSROIPooling: position-sensitive roi average pooling (R-FCN), fp32.

Inputs: a 3-D blob of output_dim * pooled_height * pooled_width channels and a 1-D roi
(x1, y1, x2, y2), rounded half away from zero (x2, y2 after adding 1) and scaled by
spatial_scale. Output cell (q, ph, pw) averages its bin — floor / ceil of the bin edges,
clamped to the image — of input channel (q * pooled_height + ph) * pooled_width + pw; an
empty bin gives 0.
"""

from __future__ import annotations

import logging
import math
from typing import ClassVar

import numpy as np

from . import Layer, Param
from ._window_nd import create_top

log = logging.getLogger("ncnn_c")

F32 = np.float32


def _roundf(v) -> np.float32:
    """C's roundf: half away from zero."""
    return F32(math.copysign(math.floor(abs(float(v)) + 0.5), float(v)))


class PSROIPooling(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "pooled_width", 7),
        Param(1, "pooled_height", 7),
        Param(2, "spatial_scale", 0.0625),
        Param(3, "output_dim", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        for key in ("pooled_width", "pooled_height", "output_dim"):
            if getattr(self, key) <= 0:
                log.error("PSROIPooling %r: %s must be positive, got %d", self.name, key, getattr(self, key))
                return -1
        return 0

    def forward(self, bottoms, tops, opt) -> int:
        if len(bottoms) != 2 or bottoms[0].dims != 3 or bottoms[0].elempack != 1:
            log.error("PSROIPooling %r: needs a 3-D fp32 feature blob and a roi blob", self.name)
            return -1
        x = np.asarray(bottoms[0].tensor(), dtype=np.float32)
        roi = np.asarray(bottoms[1].tensor(), dtype=np.float32).reshape(-1)
        pw_n, ph_n, dim = self.pooled_width, self.pooled_height, self.output_dim
        c, h, w = x.shape
        if c != dim * ph_n * pw_n:
            log.error(
                "PSROIPooling %r: %d input channels, output_dim x pooled size needs %d",
                self.name,
                c,
                dim * ph_n * pw_n,
            )
            return -1
        if roi.size < 4:
            log.error("PSROIPooling %r: the roi blob holds %d values, needs 4", self.name, roi.size)
            return -1
        scale = F32(self.spatial_scale)
        x1, y1 = _roundf(roi[0]) * scale, _roundf(roi[1]) * scale
        x2, y2 = _roundf(roi[2] + F32(1)) * scale, _roundf(roi[3] + F32(1)) * scale
        bin_w = max(x2 - x1, F32(0.1)) / F32(pw_n)
        bin_h = max(y2 - y1, F32(0.1)) / F32(ph_n)
        cells = x.reshape(dim, ph_n, pw_n, h, w)
        out = np.zeros((dim, ph_n, pw_n), np.float32)
        for ph in range(ph_n):
            hs = min(max(math.floor(y1 + F32(ph) * bin_h), 0), h)
            he = min(max(math.ceil(y1 + F32(ph + 1) * bin_h), 0), h)
            for pw in range(pw_n):
                ws = min(max(math.floor(x1 + F32(pw) * bin_w), 0), w)
                we = min(max(math.ceil(x1 + F32(pw + 1) * bin_w), 0), w)
                if he <= hs or we <= ws:
                    continue
                total = cells[:, ph, pw, hs:he, ws:we].sum(axis=(1, 2), dtype=np.float32)
                out[:, ph, pw] = total / F32((he - hs) * (we - ws))
        dst = create_top(tops[0], out.shape, opt)
        if dst is None:
            return -100
        dst[...] = out
        return 0
