"""Softplus: y = log(exp(x) + 1), in place, as ncnn computes it.

No stable ``log1p`` form: for x beyond ~88.7 ``exp`` overflows to inf and so does the result,
and for very negative x the sum rounds to 1 and the result to 0, as in ncnn.
"""

from __future__ import annotations

import numpy as np

from ._elementwise import Elementwise

_ONE = np.float32(1.0)


class Softplus(Elementwise):
    def apply(self, x, out) -> int:
        np.exp(x, out=out)
        out += _ONE
        np.log(out, out=out)
        return 0
