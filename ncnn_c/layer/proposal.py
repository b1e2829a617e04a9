"""Proposal: Faster R-CNN region proposals from RPN scores and box deltas.

Inputs: score (2 * A, h, w) with background scores in the first A channels and foreground in
the next A; bbox deltas (4 * A, h, w) as dx, dy, dw, dh per anchor; im_info [height, width,
scale]. A = 9 anchors: ratios 0.5, 1, 2 times scales 8, 16, 32 of a ``base_size`` square, as
ncnn fixes them (ncnn reads no ratio / scale params), shifted by ``feat_stride`` per cell.

Each anchor is moved by its deltas (centre-size), clipped to the image, dropped when narrower
or lower than ``min_size * scale``; the rest are sorted by foreground score, cut to
``pre_nms_topN`` (when > 0), suppressed with ``nms_thresh`` and cut to ``after_nms_topN``.
Outputs: rois (N, 1, 4) as [x1, y1, x2, y2] per channel, and optionally scores (N, 1, 1).
Like ncnn, N = 0 is an error (-100): ncnn cannot allocate an empty output.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from . import Layer, Param
from ._nms import fma32, nms_sorted, sort_descending

log = logging.getLogger("ncnn_c")

_RATIOS = (0.5, 1.0, 2.0)
_SCALES = (8.0, 16.0, 32.0)


def _round_half_away(v: float) -> int:
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def generate_anchors(base_size: int) -> np.ndarray:
    """(A, 4) anchors [x1, y1, x2, y2] centred on the base square, ratio-major as ncnn."""
    f = np.float32
    c = f(base_size) * f(0.5)
    rows = []
    for ar in _RATIOS:
        r_w = _round_half_away(float(f(base_size) / np.sqrt(f(ar))))
        r_h = _round_half_away(float(f(r_w) * f(ar)))
        for scale in _SCALES:
            half_w = f(r_w) * f(scale) * f(0.5)
            half_h = f(r_h) * f(scale) * f(0.5)
            rows.append([c - half_w, c - half_h, c + half_w, c + half_h])
    return np.asarray(rows, dtype=np.float32)


def _accumulate(start: np.ndarray, step: float, n: int) -> np.ndarray:
    """(A, n): start, start + step, ... summed in float32 one step at a time, per anchor."""
    steps = np.full((start.shape[0], n), np.float32(step), dtype=np.float32)
    steps[:, 0] = start
    return np.cumsum(steps, axis=1, dtype=np.float32)


class Proposal(Layer):
    PARAMS = (
        Param(0, "feat_stride", 16),
        Param(1, "base_size", 16),
        Param(2, "pre_nms_topN", 6000),
        Param(3, "after_nms_topN", 300),
        Param(4, "nms_thresh", 0.7),
        Param(5, "min_size", 16),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False
        self.anchors = generate_anchors(16)

    def check_params(self) -> int:
        self.anchors = generate_anchors(self.base_size)
        return 0

    def _check_inputs(self, bottoms) -> bool:
        if len(bottoms) < 3:
            log.error("Proposal %r: needs score, bbox and im_info blobs", self.name)
            return False
        score, bbox, im_info = bottoms[0], bottoms[1], bottoms[2]
        a = self.anchors.shape[0]
        if score.dims != 3 or bbox.dims != 3:
            log.error(
                "Proposal %r: score and bbox must be 3-D, got %d-D / %d-D", self.name, score.dims, bbox.dims
            )
            return False
        if score.c < 2 * a or bbox.c < 4 * a or (bbox.w, bbox.h) != (score.w, score.h):
            log.error(
                "Proposal %r: score %dx%dx%d / bbox %dx%dx%d do not fit %d anchors",
                self.name,
                score.c,
                score.h,
                score.w,
                bbox.c,
                bbox.h,
                bbox.w,
                a,
            )
            return False
        if im_info.empty() or im_info.w * im_info.h * im_info.d * im_info.c < 3:
            log.error("Proposal %r: im_info must hold height, width and scale", self.name)
            return False
        return True

    def forward(self, bottoms, tops, opt) -> int:
        if not self._check_inputs(bottoms):
            return -1
        f = np.float32
        score_t, bbox_t = bottoms[0].tensor(), bottoms[1].tensor()
        info = np.asarray(bottoms[2].tensor(), dtype=np.float32).reshape(-1)
        anchors = self.anchors
        a = anchors.shape[0]
        h, w = score_t.shape[1], score_t.shape[2]

        anchor_w = (anchors[:, 2] - anchors[:, 0])[:, None, None]
        anchor_h = (anchors[:, 3] - anchors[:, 1])[:, None, None]
        half = f(0.5)
        ax = _accumulate(anchors[:, 0], self.feat_stride, w)[:, None, :]
        ay = _accumulate(anchors[:, 1], self.feat_stride, h)[:, :, None]
        deltas = bbox_t[: 4 * a].reshape(a, 4, h, w)
        with np.errstate(over="ignore", invalid="ignore"):
            # multiply-add fused into one rounding, as the oracle's build does
            cx = fma32(anchor_w, deltas[:, 0], ax + anchor_w * half)
            cy = fma32(anchor_h, deltas[:, 1], ay + anchor_h * half)
            pw = anchor_w * np.exp(deltas[:, 2])
            ph = anchor_h * np.exp(deltas[:, 3])
            boxes = np.empty((a, h, w, 4), dtype=np.float32)
            boxes[..., 0] = cx - pw * half
            boxes[..., 1] = cy - ph * half
            boxes[..., 2] = cx + pw * half
            boxes[..., 3] = cy + ph * half

        im_h, im_w, im_scale = info[0], info[1], info[2]
        one = f(1)
        limits = np.array([im_w - one, im_h - one, im_w - one, im_h - one], dtype=np.float32)
        np.maximum(np.minimum(boxes, limits), f(0), out=boxes)
        boxes = boxes.reshape(-1, 4)
        scores = np.ascontiguousarray(score_t[a : 2 * a], dtype=np.float32).reshape(-1)

        min_box = f(self.min_size) * im_scale
        keep = ((boxes[:, 2] - boxes[:, 0] + one) >= min_box) & ((boxes[:, 3] - boxes[:, 1] + one) >= min_box)
        boxes, scores = boxes[keep], scores[keep]

        order = sort_descending(scores, self.pre_nms_topN if self.pre_nms_topN > 0 else None)
        boxes, scores = boxes[order], scores[order]
        picked = nms_sorted(boxes, self.nms_thresh, limit=max(self.after_nms_topN, 0))
        n = picked.size
        if n == 0:
            log.error("Proposal %r: no proposal survives (ncnn cannot output an empty roi blob)", self.name)
            return -100

        roi = tops[0]
        roi.create(4, 1, n, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if roi.empty():
            return -100
        roi.tensor()[:, 0, :] = boxes[picked]
        if len(tops) > 1:
            roi_score = tops[1]
            roi_score.create(1, 1, n, elemsize=4, elempack=1, allocator=opt.blob_allocator)
            if roi_score.empty():
                return -100
            roi_score.tensor()[:, 0, 0] = scores[picked]
        return 0
