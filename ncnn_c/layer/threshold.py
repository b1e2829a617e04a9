"""Threshold: y = 1 where x > threshold (param 0, default 0), else 0, in place."""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise


class Threshold(Elementwise):
    PARAMS = (Param(0, "threshold", 0.0),)

    def apply(self, x, out) -> int:
        np.greater(x, np.float32(self.threshold), out=out)
        return 0
