"""Swish (SiLU): y = x / (1 + exp(-x)), elementwise, in place."""

from __future__ import annotations

import numpy as np

from ._elementwise import Elementwise

_ONE = np.float32(1.0)


class Swish(Elementwise):
    def apply(self, x, out) -> int:
        t = np.negative(x)
        np.exp(t, out=t)
        t += _ONE
        # exp(-x) overflows to inf for x < -88 and x / inf gives the expected signed zero
        np.divide(x, t, out=out)
        return 0
