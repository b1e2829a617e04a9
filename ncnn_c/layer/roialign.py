"""ROIAlign: average of bilinear samples over each bin of one region of interest (fp32).

Inputs: a 3-D feature blob and a 1-D roi (x1, y1, x2, y2) in input coordinates, scaled by
spatial_scale (less half a pixel when ``aligned``). version 0 is ncnn's original: bins
clamped to the image, ceil(bin size) samples per axis unless sampling_ratio says, an empty
bin gives 0. version 1 is detectron2's: one sample grid for every bin, samples beyond
(-1, size] skipped but still counted. Arithmetic in fp32, in ncnn's order.
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


class _Channels:
    """The feature blob as ncnn's kernels address it: channel q's cell (y, x) at flat offset
    q * cstep + y * w + x (cstep rounded up to 16 bytes). A version 0 sample past the right
    or bottom edge (a roi beyond the image: the sample step is the unclamped bin's) makes ncnn
    read the next row or the next channel there; we read the same, and clamp reads past the
    blob's end, where ncnn's are undefined."""

    def __init__(self, x: np.ndarray) -> None:
        c, h, w = x.shape
        self.h, self.w = h, w
        self.cstep = -(-h * w // 4) * 4
        flat = np.zeros((c, self.cstep), np.float32)
        flat[:, : h * w] = x.reshape(c, -1)
        self.flat = flat.reshape(-1)
        self.base = np.arange(c) * self.cstep

    def at(self, pos: int) -> np.ndarray:
        return self.flat[np.minimum(self.base + pos, self.flat.size - 1)]

    def original(self, px, py) -> np.ndarray:
        """ncnn's bilinear_interpolate (version 0): the far neighbour clamps to the last row /
        column with weight 0."""
        h, w = self.h, self.w
        x0, y0 = int(px), int(py)
        x1, y1 = x0 + 1, y0 + 1
        a0, a1 = F32(x1) - px, px - F32(x0)
        b0, b1 = F32(y1) - py, py - F32(y0)
        if x1 >= w:
            x1, a0, a1 = w - 1, F32(1), F32(0)
        if y1 >= h:
            y1, b0, b1 = h - 1, F32(1), F32(0)
        return (
            (a0 * b0) * self.at(y0 * w + x0)
            + (a1 * b0) * self.at(y0 * w + x1)
            + (a0 * b1) * self.at(y1 * w + x0)
            + (a1 * b1) * self.at(y1 * w + x1)
        )

    def detectron2(self, px, py) -> np.ndarray:
        """detectron2's bilinear_interpolate (version 1): a sample in the last row / column
        moves onto it."""
        h, w = self.h, self.w
        px, py = max(px, F32(0)), max(py, F32(0))
        y0, x0 = int(py), int(px)
        if y0 >= h - 1:
            y0 = y1 = h - 1
            py = F32(y0)
        else:
            y1 = y0 + 1
        if x0 >= w - 1:
            x0 = x1 = w - 1
            px = F32(x0)
        else:
            x1 = x0 + 1
        ly, lx = py - F32(y0), px - F32(x0)
        hy, hx = F32(1) - ly, F32(1) - lx
        return (
            (hy * hx) * self.at(y0 * w + x0)
            + (hy * lx) * self.at(y0 * w + x1)
            + (ly * hx) * self.at(y1 * w + x0)
            + (ly * lx) * self.at(y1 * w + x1)
        )


class ROIAlign(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "pooled_width", 0),
        Param(1, "pooled_height", 0),
        Param(2, "spatial_scale", 1.0),
        Param(3, "sampling_ratio", 0),
        Param(4, "aligned", 0),
        Param(5, "version", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        for key in ("pooled_width", "pooled_height"):
            if getattr(self, key) <= 0:
                log.error("ROIAlign %r: %s must be positive, got %d", self.name, key, getattr(self, key))
                return -1
        if self.version not in (0, 1):
            log.error("ROIAlign %r: version %d is not 0 or 1", self.name, self.version)
            return -1
        return 0

    def forward(self, bottoms, tops, opt) -> int:
        if len(bottoms) != 2 or bottoms[0].dims != 3 or bottoms[0].elempack != 1:
            log.error("ROIAlign %r: needs a 3-D fp32 feature blob and a roi blob", self.name)
            return -1
        x = np.asarray(bottoms[0].tensor(), dtype=np.float32)
        roi = np.asarray(bottoms[1].tensor(), dtype=np.float32).reshape(-1)
        if roi.size < 4:
            log.error("ROIAlign %r: the roi blob holds %d values, needs 4", self.name, roi.size)
            return -1
        c, h, w = x.shape
        pw_n, ph_n = self.pooled_width, self.pooled_height
        scale = F32(self.spatial_scale)
        x1, y1, x2, y2 = (F32(v) * scale for v in roi[:4])
        if self.aligned:
            x1, y1, x2, y2 = (v - F32(0.5) for v in (x1, y1, x2, y2))
        roi_w, roi_h = x2 - x1, y2 - y1
        if not self.aligned:
            roi_w, roi_h = max(roi_w, F32(1)), max(roi_h, F32(1))
        bin_w, bin_h = roi_w / F32(pw_n), roi_h / F32(ph_n)
        out = np.zeros((c, ph_n, pw_n), np.float32)
        feat = _Channels(x)
        if self.version == 0:
            for ph in range(ph_n):
                hstart = min(max(y1 + F32(ph) * bin_h, F32(0)), F32(h))
                hend = min(max(y1 + F32(ph + 1) * bin_h, F32(0)), F32(h))
                gh = self.sampling_ratio if self.sampling_ratio > 0 else math.ceil(hend - hstart)
                for pw in range(pw_n):
                    wstart = min(max(x1 + F32(pw) * bin_w, F32(0)), F32(w))
                    wend = min(max(x1 + F32(pw + 1) * bin_w, F32(0)), F32(w))
                    gw = self.sampling_ratio if self.sampling_ratio > 0 else math.ceil(wend - wstart)
                    if hend <= hstart or wend <= wstart:
                        continue
                    acc = np.zeros(c, np.float32)
                    for by in range(gh):
                        py = hstart + (F32(by) + F32(0.5)) * bin_h / F32(gh)
                        for bx in range(gw):
                            px = wstart + (F32(bx) + F32(0.5)) * bin_w / F32(gw)
                            acc += feat.original(px, py)
                    out[:, ph, pw] = acc / F32(gh * gw)
        else:
            gh = self.sampling_ratio if self.sampling_ratio > 0 else math.ceil(roi_h / F32(ph_n))
            gw = self.sampling_ratio if self.sampling_ratio > 0 else math.ceil(roi_w / F32(pw_n))
            count = F32(max(gh * gw, 1))
            for ph in range(ph_n):
                for pw in range(pw_n):
                    acc = np.zeros(c, np.float32)
                    for by in range(gh):
                        py = y1 + F32(ph) * bin_h + (F32(by) + F32(0.5)) * bin_h / F32(gh)
                        for bx in range(gw):
                            px = x1 + F32(pw) * bin_w + (F32(bx) + F32(0.5)) * bin_w / F32(gw)
                            if py < -1.0 or py > h or px < -1.0 or px > w:
                                continue
                            acc += feat.detectron2(px, py)
                    out[:, ph, pw] = acc / count
        dst = create_top(tops[0], out.shape, opt)
        if dst is None:
            return -100
        dst[...] = out
        return 0
