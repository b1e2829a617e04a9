"""Flatten: any blob as one row of w*h*d*c elements, channel after channel."""

from __future__ import annotations

from ..mat import Mat
from . import Layer
from .reshape import share_reshaped


class Flatten(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        return share_reshaped(self, bottom, top, (bottom.w * bottom.h * bottom.d * bottom.c,), opt)
