"""Input: the layer that names a network input blob; the data passes through untouched.

The shape params (w, h, d, c) only describe the expected input for tools that infer
shapes; inference never reshapes or checks the blob against them, as in ncnn.
"""

from __future__ import annotations

from . import Layer, Param


class Input(Layer):
    PARAMS = (Param(0, "w", 0), Param(1, "h", 0), Param(11, "d", 0), Param(2, "c", 0))

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True

    def forward_inplace(self, bottom_top, opt) -> int:
        return 0
