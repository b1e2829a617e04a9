"""DetectionOutput: SSD post-processing (decode boxes, per-class NMS, keep the best).

Inputs: location deltas (4 per prior), class confidences and the prior boxes. Caffe-SSD
layout (the default): priorbox is 2 rows of 4 * num_prior values (boxes, then variances) and
confidences are prior-major (num_prior x num_class). mxnet-SSD layout (``num_class = -233``):
priorbox is num_prior rows of 4, confidences are class-major (num_class rows of num_prior) and
the variances come from params 5..8.

Each prior is decoded centre-size style; class 0 is background and skipped. Per class the
candidates above ``confidence_threshold`` are sorted by score, cut to ``nms_top_k`` and
suppressed; the survivors of all classes are sorted again and cut to ``keep_top_k``.
The output is (6, N) rows [label, score, xmin, ymin, xmax, ymax], left empty when N is 0.

ncnn skips decoding priors whose background score is >= 1 - confidence_threshold and then
reads an undefined box if such a prior still has a class score above the threshold (possible
only when scores are not a probability distribution); we decode every prior instead.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param
from ._nms import fma32, nms_sorted, sort_descending, write_detections

log = logging.getLogger("ncnn_c")

_MXNET = -233


def _flat(m) -> np.ndarray:
    return np.ascontiguousarray(m.tensor(), dtype=np.float32).reshape(-1)


class DetectionOutput(Layer):
    PARAMS = (
        Param(0, "num_class", 0),
        Param(1, "nms_threshold", 0.05),
        Param(2, "nms_top_k", 300),
        Param(3, "keep_top_k", 100),
        Param(4, "confidence_threshold", 0.5),
        Param(5, "variance0", 0.1),
        Param(6, "variance1", 0.1),
        Param(7, "variance2", 0.2),
        Param(8, "variance3", 0.2),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        if self.num_class < 0 and self.num_class != _MXNET:
            log.error("DetectionOutput %r: num_class %d is negative", self.name, self.num_class)
            return -1
        if self.nms_top_k < 0 or self.keep_top_k < 0:
            # ncnn resizes its candidate lists to these counts; negative ones cannot work
            log.error(
                "DetectionOutput %r: nms_top_k %d / keep_top_k %d must not be negative",
                self.name,
                self.nms_top_k,
                self.keep_top_k,
            )
            return -1
        return 0

    def _inputs(self, bottoms):
        """(location (P,4), confidence (P,C), priors (P,4), variances (P,4) or (4,)) or None."""
        if len(bottoms) < 3 or any(b.empty() for b in bottoms[:3]):
            log.error("DetectionOutput %r: needs location, confidence and priorbox blobs", self.name)
            return None
        location, confidence, priorbox = bottoms[0], bottoms[1], bottoms[2]
        loc = _flat(location)
        conf = _flat(confidence)
        pb = _flat(priorbox)
        if self.num_class == _MXNET:
            num_prior = priorbox.h if priorbox.dims >= 2 else 1
            num_class = confidence.h if confidence.dims >= 2 else 1
            if pb.size < 4 * num_prior:
                log.error("DetectionOutput %r: priorbox holds fewer than 4 x %d values", self.name, num_prior)
                return None
            priors = pb[: 4 * num_prior].reshape(num_prior, 4)
            variances = np.array(
                [self.variance0, self.variance1, self.variance2, self.variance3], dtype=np.float32
            )
            if conf.size < num_class * num_prior:
                log.error(
                    "DetectionOutput %r: confidence has %d values, %d classes x %d priors need more",
                    self.name,
                    conf.size,
                    num_class,
                    num_prior,
                )
                return None
            scores = conf[: num_class * num_prior].reshape(num_class, num_prior).T
        else:
            num_class = self.num_class
            if priorbox.dims != 2 or priorbox.h < 2:
                log.error(
                    "DetectionOutput %r: priorbox must be 2 rows (boxes, variances), got %d-D h=%d",
                    self.name,
                    priorbox.dims,
                    priorbox.h,
                )
                return None
            num_prior = priorbox.w // 4
            rows = priorbox.tensor()
            priors = np.ascontiguousarray(rows[0, : 4 * num_prior], dtype=np.float32).reshape(num_prior, 4)
            variances = np.ascontiguousarray(rows[1, : 4 * num_prior], dtype=np.float32).reshape(num_prior, 4)
            if conf.size < num_class * num_prior:
                log.error(
                    "DetectionOutput %r: confidence has %d values, %d priors x %d classes need more",
                    self.name,
                    conf.size,
                    num_prior,
                    num_class,
                )
                return None
            scores = conf[: num_prior * num_class].reshape(num_prior, num_class)
        if loc.size < 4 * num_prior:
            log.error(
                "DetectionOutput %r: location has %d values, %d priors need %d",
                self.name,
                loc.size,
                num_prior,
                4 * num_prior,
            )
            return None
        return loc[: 4 * num_prior].reshape(num_prior, 4), scores, priors, variances

    @staticmethod
    def _decode(loc: np.ndarray, priors: np.ndarray, var: np.ndarray) -> np.ndarray:
        """Centre-size decoding of every prior, float32 in ncnn's operation order."""
        half = np.float32(0.5)
        var = np.broadcast_to(var, loc.shape)
        pb_w = priors[:, 2] - priors[:, 0]
        pb_h = priors[:, 3] - priors[:, 1]
        pb_cx = (priors[:, 0] + priors[:, 2]) * half
        pb_cy = (priors[:, 1] + priors[:, 3]) * half
        with np.errstate(over="ignore", invalid="ignore"):
            # multiply-add fused into one rounding, as the oracle's build does
            cx = fma32(var[:, 0] * loc[:, 0], pb_w, pb_cx)
            cy = fma32(var[:, 1] * loc[:, 1], pb_h, pb_cy)
            bw = np.exp(var[:, 2] * loc[:, 2]) * pb_w
            bh = np.exp(var[:, 3] * loc[:, 3]) * pb_h
            boxes = np.empty(loc.shape, dtype=np.float32)
            boxes[:, 0] = cx - bw * half
            boxes[:, 1] = cy - bh * half
            boxes[:, 2] = cx + bw * half
            boxes[:, 3] = cy + bh * half
        return boxes

    def forward(self, bottoms, tops, opt) -> int:
        parsed = self._inputs(bottoms)
        if parsed is None:
            return -1
        loc, scores, priors, variances = parsed
        boxes = self._decode(loc, priors, variances)
        thr = np.float32(self.confidence_threshold)

        labels, kept_scores, kept_boxes = [], [], []
        # class 0 is the background
        for c in range(1, scores.shape[1]):
            idx = np.flatnonzero(scores[:, c] > thr)
            if idx.size == 0:
                continue
            sc = scores[idx, c]
            order = sort_descending(sc, self.nms_top_k)
            idx, sc = idx[order], sc[order]
            picked = nms_sorted(boxes[idx], self.nms_threshold)
            labels.append(np.full(picked.size, c, dtype=np.float32))
            kept_scores.append(sc[picked])
            kept_boxes.append(boxes[idx[picked]])
        if not labels:
            return 0
        all_labels = np.concatenate(labels)
        all_scores = np.concatenate(kept_scores)
        all_boxes = np.concatenate(kept_boxes)
        order = sort_descending(all_scores, self.keep_top_k)
        return write_detections(tops[0], all_labels[order], all_scores[order], all_boxes[order], opt)
