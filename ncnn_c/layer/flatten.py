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

    def out_shape(self, bottom) -> tuple[int, ...]:
        """The numpy shape of the output for a blob with ``bottom``'s w, h, d, c."""
        return (bottom.w * bottom.h * bottom.d * bottom.c,)

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        return share_reshaped(self, bottom, top, self.out_shape(bottom), opt)
