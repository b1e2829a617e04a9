"""Drawing of ``ncnn.utils.visual``: detections, faces and poses onto a BGR uint8 image.

ncnn's versions draw with OpenCV and show the result in a window. These draw in place with
ncnn_c's own ``draw_*`` (so no OpenCV is needed; text uses ncnn_c's bitmap font) and return
the image; when OpenCV is installed and ``show`` is true they also show it, as ncnn's do.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from .. import drawing

_FONT = 10  # text cell: 10 pixels wide, 20 tall
# colours as ncnn_c.drawing takes them: channel 0 (blue, in BGR) in the lowest byte
_BLUE, _GREEN, _YELLOW, _WHITE, _BLACK = 0x0000FF, 0x00FF00, 0xFFFF00, 0xFFFFFF, 0x000000
_JOINTS = [(0, 1), (1, 3), (0, 2), (2, 4), (5, 6), (5, 7), (7, 9), (6, 8), (8, 10), (5, 11), (6, 12),
           (11, 12), (11, 13), (12, 14), (13, 15), (14, 16)]  # fmt: skip


def _canvas(image: np.ndarray) -> tuple[np.ndarray, int, int]:
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3 or not image.flags.c_contiguous:
        raise ValueError("expected a C-contiguous (h, w, 3) uint8 BGR image")
    return image, image.shape[1], image.shape[0]


def _box(image: np.ndarray, rect, color: int) -> None:
    img, w, h = _canvas(image)
    drawing.draw_rectangle_c3(img, w, h, int(rect.x), int(rect.y), int(rect.w), int(rect.h), color, 1)


def _label(image: np.ndarray, text: str, x: float, y: float) -> None:
    """``text`` in black on white just above ``(x, y)``, kept inside the image."""
    img, w, h = _canvas(image)
    tw, th = drawing.get_text_drawing_size(text, _FONT)
    x = min(int(x), w - tw)
    y = max(int(y) - th, 0)
    drawing.draw_rectangle_c3(img, w, h, x, y, tw, th, _WHITE, -1)
    drawing.draw_text_c3(img, w, h, text, x, y, _FONT, _BLACK)


def _show(image: np.ndarray, show: bool) -> np.ndarray:
    if show and importlib.util.find_spec("cv2") is not None:
        import cv2  # type: ignore[import-not-found]

        cv2.imshow("image", image)
        cv2.waitKey(0)
    return image


def draw_detection_objects(image: np.ndarray, class_names, objects, min_prob: float = 0.0, show: bool = True):
    """Boxes and ``class prob%`` labels of ``objects`` (Detect_Object) with ``prob >= min_prob``."""
    for obj in objects:
        if obj.prob < min_prob:
            continue
        print(
            f"{int(obj.label)} = {obj.prob:.5f} at {obj.rect.x:.2f} {obj.rect.y:.2f} {obj.rect.w:.2f} x {obj.rect.h:.2f}"
        )
        _box(image, obj.rect, _BLUE)
        _label(image, f"{class_names[int(obj.label)]} {obj.prob * 100:.1f}%", obj.rect.x, obj.rect.y)
    return _show(image, show)


def draw_faceobjects(image: np.ndarray, faceobjects, show: bool = True):
    """Boxes, five landmarks and ``prob%`` labels of ``faceobjects`` (Face_Object)."""
    img, w, h = _canvas(image)
    for obj in faceobjects:
        print(f"{obj.prob:.5f} at {obj.rect.x:.2f} {obj.rect.y:.2f} {obj.rect.w:.2f} x {obj.rect.h:.2f}")
        _box(image, obj.rect, _BLUE)
        for p in obj.landmark[:5]:
            drawing.draw_circle_c3(img, w, h, int(p.x), int(p.y), 2, _YELLOW, -1)
        _label(image, f"{obj.prob * 100:.1f}%", obj.rect.x, obj.rect.y)
    return _show(image, show)


def draw_pose(image: np.ndarray, keypoints, show: bool = True):
    """The 17 COCO keypoints (KeyPoint) and the bones between them, where ``prob >= 0.2``."""
    img, w, h = _canvas(image)
    for a, b in _JOINTS:
        p1, p2 = keypoints[a], keypoints[b]
        if p1.prob >= 0.2 and p2.prob >= 0.2:
            drawing.draw_line_c3(img, w, h, int(p1.p.x), int(p1.p.y), int(p2.p.x), int(p2.p.y), _BLUE, 2)
    for k in keypoints:
        print(f"{k.p.x:.2f} {k.p.y:.2f} = {k.prob:.5f}")
        if k.prob >= 0.2:
            drawing.draw_circle_c3(img, w, h, int(k.p.x), int(k.p.y), 3, _GREEN, -1)
    return _show(image, show)


def print_topk(cls_scores: np.ndarray, topk: int) -> None:
    """The ``topk`` best class indexes and scores, one ``index=score`` a line."""
    indexes = np.argsort(cls_scores)[::-1][:topk]
    for index in indexes:
        print(f"{index}={cls_scores[index]:f}")
