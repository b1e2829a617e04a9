"""Dropout at inference time: a multiplication by ``scale`` (param 0), nothing when it is 1."""

from __future__ import annotations

import numpy as np

from . import Layer


class Dropout(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.scale = 1.0

    def load_param(self, pd) -> int:
        self.scale = float(pd.get(0, 1.0))
        return 0

    def forward_inplace(self, bottom_top, opt) -> int:
        if self.scale == 1.0:
            return 0
        x = bottom_top.tensor()
        np.multiply(x, np.float32(self.scale), out=x)
        return 0
