"""Box and score maths of ``ncnn.utils.functional`` (numpy, N x 4 boxes)."""

from __future__ import annotations

import numpy as np


def xywh2xyxy(x: np.ndarray) -> np.ndarray:
    """Centre-size boxes ``[cx, cy, w, h]`` to corner boxes ``[x1, y1, x2, y2]``."""
    y = np.zeros_like(x)
    y[:, 0:2] = x[:, 0:2] - x[:, 2:4] / 2
    y[:, 2:4] = x[:, 0:2] + x[:, 2:4] / 2
    return y


def xyxy2xywh(x: np.ndarray) -> np.ndarray:
    """Corner boxes ``[x1, y1, x2, y2]`` to centre-size boxes ``[cx, cy, w, h]``."""
    y = np.zeros_like(x)
    y[:, 0:2] = (x[:, 0:2] + x[:, 2:4]) / 2
    y[:, 2:4] = x[:, 2:4] - x[:, 0:2]
    return y


def make_grid(nx: int = 20, ny: int = 20) -> np.ndarray:
    """(1, ny, nx, 2) float32 grid of ``(x, y)`` cell indexes, as YOLO heads decode against."""
    xv, yv = np.meshgrid(np.arange(nx), np.arange(ny))
    return np.stack((xv, yv), 2).reshape((1, ny, nx, 2)).astype(np.float32)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softmax(x: np.ndarray) -> np.ndarray:
    """Row-wise softmax of a 2-D array, computed in place (as ncnn's helper) and returned."""
    x -= np.max(x, axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= np.sum(x, axis=-1, keepdims=True)
    return x


def area_of(left_top: np.ndarray, right_bottom: np.ndarray) -> np.ndarray:
    """Areas of the boxes with these corners (0 where they are inverted)."""
    hw = np.clip(right_bottom - left_top, 0.0, None)
    return hw[..., 0] * hw[..., 1]


def iou_of(boxes0: np.ndarray, boxes1: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Intersection over union of corner boxes ``boxes0`` (N, 4) and ``boxes1`` (N or 1, 4)."""
    overlap = area_of(
        np.maximum(boxes0[..., :2], boxes1[..., :2]), np.minimum(boxes0[..., 2:], boxes1[..., 2:])
    )
    area0 = area_of(boxes0[..., :2], boxes0[..., 2:])
    area1 = area_of(boxes1[..., :2], boxes1[..., 2:])
    return overlap / (area0 + area1 - overlap + eps)


def nms(
    boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, top_k: int = -1, candidate_size: int = 200
):
    """Greedy non-maximum suppression: indexes of the kept corner boxes, best score first.

    Only the ``candidate_size`` best-scored boxes are considered; ``top_k`` > 0 stops after
    that many are kept. A box is dropped when its IoU with a kept one exceeds ``iou_threshold``.
    """
    picked: list[int] = []
    order = np.argsort(scores)[-candidate_size:]
    while len(order) > 0:
        current = int(order[-1])
        picked.append(current)
        if 0 < top_k == len(picked) or len(order) == 1:
            break
        order = order[:-1]
        iou = iou_of(boxes[order, :], boxes[current][None, :])
        order = order[iou <= iou_threshold]
    return picked
