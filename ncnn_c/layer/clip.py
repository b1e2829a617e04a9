"""Clip: y = clamp(x, min, max) (params 0 / 1, default the whole float range), in place.

As in ncnn the lower bound is applied first, so ``min > max`` gives ``max`` everywhere.
"""

from __future__ import annotations

import numpy as np

from . import FLT_MAX, Param
from ._elementwise import Elementwise


class Clip(Elementwise):
    PARAMS = (Param(0, "min", -FLT_MAX), Param(1, "max", FLT_MAX))

    def apply(self, x, out) -> int:
        np.maximum(x, np.float32(self.min), out=out)
        np.minimum(out, np.float32(self.max), out=out)
        return 0
