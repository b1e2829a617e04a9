"""CELU: y = x for x >= 0, (exp(x / alpha) - 1) * alpha below (param 0 alpha, default 1), in place.

ncnn divides by alpha (no reciprocal), so we do too; NaN stays NaN (it is not below 0).
"""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


class CELU(Elementwise):
    PARAMS = (Param(0, "alpha", 1.0),)

    def apply(self, x, out) -> int:
        alpha = np.float32(self.alpha)
        neg = np.minimum(x, _ZERO)
        neg /= alpha
        np.exp(neg, out=neg)
        neg -= _ONE
        neg *= alpha
        # the negative half is exactly 0 where x >= 0, the positive half where x < 0
        np.maximum(x, _ZERO, out=out)
        out += neg
        return 0
