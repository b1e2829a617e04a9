"""ReLU / leaky ReLU (param 0 = slope for negative inputs), fp32, in place."""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise
from .prelu import leaky

_ZERO = np.float32(0.0)


class ReLU(Elementwise):
    PARAMS = (Param(0, "slope", 0.0),)

    def apply(self, x, out) -> int:
        if self.slope == 0.0:
            np.maximum(x, _ZERO, out=out)
        else:
            leaky(x, out, np.float32(self.slope))
        return 0
