"""YoloDetectionOutput: YOLOv2 region-layer decoding plus NMS over one or more feature maps.

Each input is (num_box * (5 + num_class), h, w): per box x, y, w, h, objectness, then class
logits. The class logits are soft-maxed in place (ncnn runs its Softmax layer on them, so the
inputs are modified), the box is decoded against the cell and ``biases`` (anchor w, h pairs
in cells), and confidence = sigmoid(objectness) * best class probability is kept when
>= ``confidence_threshold``. All kept boxes are sorted by confidence and suppressed with
``nms_threshold`` (class-agnostic). The first blob becomes (6, N) rows [label + 1, score,
xmin, ymin, xmax, ymax] in [0, 1] image units.

The layer works in place like ncnn's: when nothing is detected the first blob is left as it
is, i.e. the input with its class channels soft-maxed, and that is what the net outputs.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param
from ._nms import nms_sorted, sort_descending, write_detections

log = logging.getLogger("ncnn_c")


def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.float32(1) / (np.float32(1) + np.exp(-x))


class YoloDetectionOutput(Layer):
    PARAMS = (
        Param(0, "num_class", 20),
        Param(1, "num_box", 5),
        Param(2, "confidence_threshold", 0.01),
        Param(3, "nms_threshold", 0.45),
        Param(4, "biases", kind="floats"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = True

    def check_params(self) -> int:
        if self.num_box <= 0 or self.num_class < 0:
            log.error(
                "YoloDetectionOutput %r: num_box %d / num_class %d", self.name, self.num_box, self.num_class
            )
            return -1
        if self.biases.size < 2 * self.num_box:
            log.error(
                "YoloDetectionOutput %r: %d biases, %d boxes need %d",
                self.name,
                self.biases.size,
                self.num_box,
                2 * self.num_box,
            )
            return -1
        return 0

    def forward(self, bottoms, tops, opt) -> int:
        # out of place: work on copies, as ncnn's Layer::forward does for in-place layers
        work = [b.clone(opt.blob_allocator) for b in bottoms]
        ret = self.forward_inplace(work, opt)
        if ret == 0:
            tops[0].share_from(work[0])
        return ret

    def _decode(self, x: np.ndarray):
        """Softmax the class logits of one blob in place; return (labels, scores, boxes) kept."""
        f = np.float32
        nb, nc = self.num_box, self.num_class
        c, h, w = x.shape
        v = x[: nb * (5 + nc)].reshape(nb, 5 + nc, h, w)
        cls = v[:, 5:]
        if nc:
            np.subtract(cls, cls.max(axis=1, keepdims=True), out=cls)
            np.exp(cls, out=cls)
            np.divide(cls, cls.sum(axis=1, keepdims=True), out=cls)
            label = np.argmax(cls, axis=1)
            class_score = np.take_along_axis(cls, label[:, None], axis=1)[:, 0]
        else:
            label = np.zeros((nb, h, w), np.intp)
            class_score = np.zeros((nb, h, w), np.float32)
        conf = sigmoid(v[:, 4]) * class_score
        keep = conf >= f(self.confidence_threshold)
        if not keep.any():
            return None
        bias = self.biases[: 2 * nb].reshape(nb, 2)
        half = f(0.5)
        with np.errstate(over="ignore", invalid="ignore"):
            cx = (np.arange(w, dtype=f)[None, None, :] + sigmoid(v[:, 0])) / f(w)
            cy = (np.arange(h, dtype=f)[None, :, None] + sigmoid(v[:, 1])) / f(h)
            bw = np.exp(v[:, 2]) * bias[:, 0, None, None] / f(w)
            bh = np.exp(v[:, 3]) * bias[:, 1, None, None] / f(h)
            boxes = np.stack([cx - bw * half, cy - bh * half, cx + bw * half, cy + bh * half], axis=-1)
        return label[keep], conf[keep], boxes[keep]

    def forward_inplace(self, bottom_tops, opt) -> int:
        nb, nc = self.num_box, self.num_class
        for m in bottom_tops:
            if m.dims != 3 or m.c // nb != 5 + nc:
                log.error(
                    "YoloDetectionOutput %r: a %d-D blob with %d channels is not %d boxes x (5 + %d)",
                    self.name,
                    m.dims,
                    m.c,
                    nb,
                    nc,
                )
                return -1
        labels, scores, boxes = [], [], []
        for m in bottom_tops:
            found = self._decode(m.tensor())
            if found is not None:
                labels.append(found[0])
                scores.append(found[1])
                boxes.append(found[2])
        if not scores:
            return 0
        all_scores = np.concatenate(scores)
        order = sort_descending(all_scores)
        all_boxes = np.concatenate(boxes)[order]
        picked = order[nms_sorted(all_boxes, self.nms_threshold)]
        all_labels = np.concatenate(labels).astype(np.float32) + np.float32(1)
        # create() gives the first blob new storage; Mats sharing the input keep theirs
        return write_detections(
            bottom_tops[0], all_labels[picked], all_scores[picked], np.concatenate(boxes)[picked], opt
        )
