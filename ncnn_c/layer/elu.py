"""ELU: y = x for x >= 0, alpha * (exp(x) - 1) below (param 0 alpha, default 0.1), in place."""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


def exp_linear(x, out, pos_scale: float, neg_scale: float) -> None:
    """out = pos_scale * x where x >= 0, neg_scale * (exp(x) - 1) where x < 0 (ELU, SELU).

    Written as the sum of the two halves, each zero where the other applies, so no mask is
    needed and ``x`` may be ``out``.
    """
    neg = np.minimum(x, _ZERO)
    # exp(x) - 1 as ncnn computes it (expm1 would be more exact for tiny x, and slower)
    np.exp(neg, out=neg)
    neg -= _ONE
    neg *= np.float32(neg_scale)
    np.maximum(x, _ZERO, out=out)
    if pos_scale != 1.0:
        out *= np.float32(pos_scale)
    out += neg


class ELU(Elementwise):
    PARAMS = (Param(0, "alpha", 0.1),)

    def apply(self, x, out) -> int:
        exp_linear(x, out, 1.0, self.alpha)
        return 0
