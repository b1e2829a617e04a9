"""Helpers of the PyPI ``ncnn.utils`` package: downloads, result objects, box maths, drawing.

``import ncnn_c.utils`` (or ``ncnn.utils`` through ``import ncnn_c as ncnn``) gives the same
names: ``download``, ``check_sha1``, the objects (``Point``, ``Rect``, ``Detect_Object``,
``Face_Object``, ``KeyPoint``) and the drawing functions; ``utils.functional`` has the box
maths. Written for ncnn_c on the standard library: no ``requests``, ``tqdm`` or OpenCV needed
(drawing uses ncnn_c's own ``draw_*``; OpenCV only opens a window when it is installed).
"""

from __future__ import annotations

from . import functional
from .download import check_sha1, download
from .objects import Detect_Object, Face_Object, KeyPoint, Point, Rect
from .visual import draw_detection_objects, draw_faceobjects, draw_pose, print_topk

__all__ = [
    "Detect_Object",
    "Face_Object",
    "KeyPoint",
    "Point",
    "Rect",
    "check_sha1",
    "download",
    "draw_detection_objects",
    "draw_faceobjects",
    "draw_pose",
    "functional",
    "print_topk",
]
