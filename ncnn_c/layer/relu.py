"""ReLU / leaky ReLU (param 0 = slope for negative inputs), fp32, in place."""

from __future__ import annotations

import numpy as np

from . import Layer


class ReLU(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = True
        self.slope = 0.0

    def load_param(self, pd) -> int:
        self.slope = float(pd.get(0, 0.0))
        return 0

    def forward_inplace(self, bottom_top, opt) -> int:
        x = bottom_top.tensor()
        if self.slope == 0.0:
            np.maximum(x, 0.0, out=x)
        else:
            np.multiply(x, np.float32(self.slope), out=x, where=x < 0)
        return 0
