"""Dropout at inference time: a multiplication by ``scale`` (param 0), nothing when it is 1."""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise


class Dropout(Elementwise):
    PARAMS = (Param(0, "scale", 1.0),)

    def apply(self, x, out) -> int:
        if self.scale != 1.0:
            np.multiply(x, np.float32(self.scale), out=out)
        elif out is not x:
            np.copyto(out, x)
        return 0
