"""ROIPooling: max pooling of one region of interest into a fixed pooled_height x pooled_width grid.

Inputs: the feature map (c, h, w) and the roi [x1, y1, x2, y2] in image coordinates (the
first four values of the roi blob). The corners are scaled by ``spatial_scale`` and rounded
half away from zero; bin (ph, pw) covers rows floor(ph * bin_h) .. ceil((ph + 1) * bin_h)
of the region (likewise columns), clipped to the map; an empty bin gives 0.
Output: (c, pooled_height, pooled_width).

Known difference: the PyPI ncnn build computes 1 / pooled size with an approximate reciprocal
(rcpps plus one Newton step), which on some CPUs lands one ulp low (e.g. for 7 on AMD EPYC); a
bin edge that should fall exactly on a whole row then takes one more row. We use the exact
float32 reciprocal, which agrees with the oracle whenever no bin edge is an exact integer.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


def _round_half_away(v: np.float32) -> int:
    return int(math.copysign(math.floor(abs(float(v)) + 0.5), float(v)))


class ROIPooling(Layer):
    PARAMS = (
        Param(0, "pooled_width", 0),
        Param(1, "pooled_height", 0),
        Param(2, "spatial_scale", 1.0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        if self.pooled_width <= 0 or self.pooled_height <= 0:
            log.error(
                "ROIPooling %r: pooled size %dx%d must be positive",
                self.name,
                self.pooled_width,
                self.pooled_height,
            )
            return -1
        return 0

    def forward(self, bottoms, tops, opt) -> int:
        if len(bottoms) < 2:
            log.error("ROIPooling %r: needs the feature map and the roi blob", self.name)
            return -1
        feat, roi_blob = bottoms[0], bottoms[1]
        if feat.dims != 3:
            log.error("ROIPooling %r: feature map must be 3-D, got %d-D", self.name, feat.dims)
            return -1
        roi = np.asarray(roi_blob.tensor(), dtype=np.float32).reshape(-1)
        if roi.size < 4:
            log.error("ROIPooling %r: roi blob holds %d values, needs 4", self.name, roi.size)
            return -1
        x = feat.tensor()
        c, h, w = x.shape
        pw_n, ph_n = self.pooled_width, self.pooled_height

        scale = np.float32(self.spatial_scale)
        x1, y1, x2, y2 = (_round_half_away(v * scale) for v in roi[:4])
        roi_w = max(x2 - x1 + 1, 1)
        roi_h = max(y2 - y1 + 1, 1)
        # the oracle's build turns this division into a multiplication by a reciprocal; that
        # decides whether a bin edge landing on a whole row / column is included, so we do the same
        one = np.float32(1)
        bin_w = np.float32(roi_w) * (one / np.float32(pw_n))
        bin_h = np.float32(roi_h) * (one / np.float32(ph_n))

        def bounds(start: int, n: int, size: float, limit: int):
            k = np.arange(n, dtype=np.float32)
            lo = start + np.floor(k * np.float32(size)).astype(np.int64)
            hi = start + np.ceil((k + 1) * np.float32(size)).astype(np.int64)
            return np.clip(lo, 0, limit), np.clip(hi, 0, limit)

        hs, he = bounds(y1, ph_n, bin_h, h)
        ws, we = bounds(x1, pw_n, bin_w, w)

        top = tops[0]
        top.create(pw_n, ph_n, c, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        # one reduction per bin over every channel at once; bins are few (pooled sizes)
        for ph in range(ph_n):
            for pw in range(pw_n):
                if he[ph] <= hs[ph] or we[pw] <= ws[pw]:
                    out[:, ph, pw] = 0
                else:
                    np.max(x[:, hs[ph] : he[ph], ws[pw] : we[pw]], axis=(1, 2), out=out[:, ph, pw])
        return 0
