"""Yolov3DetectionOutput: YOLOv3 decoding over several feature maps, then class-agnostic NMS.

Input b is (num_box * (5 + num_class), h, w): per box x, y, w, h, objectness and class
logits. Box p of input b uses anchor ``mask[b * num_box + p]`` (w, h pairs in ``biases``, in
pixels of a network input of ``anchors_scale[b]`` times the map size). The best class is the
largest raw logit (first one on ties) and the confidence is ncnn's
1 / (1 + exp(-objectness) * (1 + exp(-class_logit))) — ncnn's parenthesisation, not the
product of two sigmoids — kept when >= ``confidence_threshold``. All kept boxes are sorted by
confidence and suppressed when intersection > ``nms_threshold`` * union, the union using
each box's decoded w * h. Output: (6, N) rows [label + 1, score, xmin, ymin, xmax, ymax] in
[0, 1] image units, left empty when nothing is detected. Inputs are not modified.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param
from ._nms import fma32, nms_sorted, sort_descending, write_detections
from .yolodetectionoutput import sigmoid

log = logging.getLogger("ncnn_c")


class Yolov3DetectionOutput(Layer):
    PARAMS = (
        Param(0, "num_class", 20),
        Param(1, "num_box", 5),
        Param(2, "confidence_threshold", 0.01),
        Param(3, "nms_threshold", 0.45),
        Param(4, "biases", kind="floats"),
        Param(5, "mask", kind="floats"),
        Param(6, "anchors_scale", kind="floats"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        if self.num_box <= 0 or self.num_class < 0:
            log.error(
                "Yolov3DetectionOutput %r: num_box %d / num_class %d", self.name, self.num_box, self.num_class
            )
            return -1
        return 0

    def _check_inputs(self, bottoms) -> bool:
        nb, nc = self.num_box, self.num_class
        if not bottoms:
            log.error("Yolov3DetectionOutput %r: no input blob", self.name)
            return False
        for m in bottoms:
            if m.dims != 3 or m.c // nb != 5 + nc:
                log.error(
                    "Yolov3DetectionOutput %r: a %d-D blob with %d channels is not %d boxes x (5 + %d)",
                    self.name,
                    m.dims,
                    m.c,
                    nb,
                    nc,
                )
                return False
        n = len(bottoms)
        if self.mask.size < nb * n or self.anchors_scale.size < n:
            log.error(
                "Yolov3DetectionOutput %r: %d inputs need %d mask entries and %d anchors_scale, got %d / %d",
                self.name,
                n,
                nb * n,
                n,
                self.mask.size,
                self.anchors_scale.size,
            )
            return False
        idx = self.mask[: nb * n].astype(np.int64)
        if idx.min() < 0 or 2 * idx.max() + 1 >= self.biases.size:
            log.error(
                "Yolov3DetectionOutput %r: mask %s indexes past %d biases pairs",
                self.name,
                idx.tolist(),
                self.biases.size // 2,
            )
            return False
        return True

    def _decode(self, b: int, x: np.ndarray):
        f = np.float32
        nb, nc = self.num_box, self.num_class
        c, h, w = x.shape
        v = x[: nb * (5 + nc)].reshape(nb, 5 + nc, h, w)
        if nc:
            cls = v[:, 5:]
            label = np.argmax(cls, axis=1)
            class_score = np.take_along_axis(cls, label[:, None], axis=1)[:, 0]
        else:
            label = np.zeros((nb, h, w), np.intp)
            class_score = np.full((nb, h, w), -np.finfo(np.float32).max, np.float32)
        one = f(1)
        with np.errstate(over="ignore", invalid="ignore"):
            # the oracle's build fuses 1 + a * b into one fma; equal scores (ties) depend on it
            conf = one / fma32(np.exp(-v[:, 4]), one + np.exp(-class_score), one)
        keep = conf >= f(self.confidence_threshold)
        if not keep.any():
            return None
        # the network input size this map was computed for, truncated to int as ncnn does
        net_w = int(f(self.anchors_scale[b]) * f(w))
        net_h = int(f(self.anchors_scale[b]) * f(h))
        idx = self.mask[b * nb : (b + 1) * nb].astype(np.int64)
        bias_w = self.biases[2 * idx][:, None, None]
        bias_h = self.biases[2 * idx + 1][:, None, None]
        half = f(0.5)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            cx = (np.arange(w, dtype=f)[None, None, :] + sigmoid(v[:, 0])) / f(w)
            cy = (np.arange(h, dtype=f)[None, :, None] + sigmoid(v[:, 1])) / f(h)
            bw = np.exp(v[:, 2]) * bias_w / f(net_w)
            bh = np.exp(v[:, 3]) * bias_h / f(net_h)
            boxes = np.stack([cx - bw * half, cy - bh * half, cx + bw * half, cy + bh * half], axis=-1)
            area = bw * bh
        return label[keep], conf[keep], boxes[keep], area[keep]

    def forward(self, bottoms, tops, opt) -> int:
        if not self._check_inputs(bottoms):
            return -1
        found = [d for b, m in enumerate(bottoms) if (d := self._decode(b, m.tensor())) is not None]
        if not found:
            return 0
        scores = np.concatenate([d[1] for d in found])
        order = sort_descending(scores)
        boxes = np.concatenate([d[2] for d in found])[order]
        areas = np.concatenate([d[3] for d in found])[order]
        picked = nms_sorted(boxes, self.nms_threshold, areas=areas, product=True)
        labels = np.concatenate([d[0] for d in found]).astype(np.float32)[order][picked] + np.float32(1)
        return write_detections(tops[0], labels, scores[order][picked], boxes[picked], opt)
