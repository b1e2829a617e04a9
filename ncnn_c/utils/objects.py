"""Result records of ``ncnn.utils.objects``: what the model zoo's detectors return."""

from __future__ import annotations

import numpy as np


class Point:
    def __init__(self, x: float = 0.0, y: float = 0.0) -> None:
        self.x = x
        self.y = y


class Rect:
    """Top-left corner ``x, y`` and size ``w, h``."""

    def __init__(self, x: float = 0, y: float = 0, w: float = 0, h: float = 0) -> None:
        self.x = x
        self.y = y
        self.w = w
        self.h = h

    def area(self) -> float:
        return self.w * self.h

    def intersection_area(self, b: Rect) -> float:
        """Area of the overlap with ``b`` (0 when they do not overlap)."""
        iw = np.minimum(self.x + self.w, b.x + b.w) - np.maximum(self.x, b.x)
        ih = np.minimum(self.y + self.h, b.y + b.h) - np.maximum(self.y, b.y)
        return float(max(iw, 0) * max(ih, 0))


class Detect_Object:  # noqa: N801 - the PyPI package's name
    def __init__(
        self, label: float = 0, prob: float = 0, x: float = 0, y: float = 0, w: float = 0, h: float = 0
    ):
        self.label = label
        self.prob = prob
        self.rect = Rect(x, y, w, h)


class Face_Object:  # noqa: N801 - the PyPI package's name
    def __init__(self) -> None:
        self.prob = 0.0
        self.rect = Rect()
        self.landmark: list[Point] = []


class KeyPoint:
    def __init__(self) -> None:
        self.p = Point()
        self.prob = 0.0
