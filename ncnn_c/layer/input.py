"""Input: the layer that names a network input blob; the data passes through untouched.

The shape params (w, h, d, c) only describe the expected input for tools that infer
shapes; inference never reshapes or checks the blob against them, as in ncnn.
"""

from __future__ import annotations

from . import Layer


class Input(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.w = self.h = self.d = self.c = 0

    def load_param(self, pd) -> int:
        self.w = pd.get(0, 0)
        self.h = pd.get(1, 0)
        self.d = pd.get(11, 0)
        self.c = pd.get(2, 0)
        return 0

    def forward_inplace(self, bottom_top, opt) -> int:
        return 0
