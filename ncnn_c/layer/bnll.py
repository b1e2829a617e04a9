"""BNLL (softplus): y = log(1 + exp(x)), elementwise, in place.

Evaluated as ncnn does, ``max(x, 0) + log(1 + exp(-|x|))`` in float32 (exp never overflows;
the log of a float32 sum rather than log1p, so small results round like ncnn's).
"""

from __future__ import annotations

import numpy as np

from ._elementwise import Elementwise, negate

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


class BNLL(Elementwise):
    def apply(self, x, out) -> int:
        t = np.abs(x)
        negate(t, t)
        np.exp(t, out=t)
        t += _ONE
        np.log(t, out=t)
        np.maximum(x, _ZERO, out=out)
        out += t
        return 0
