"""Sigmoid: y = 1 / (1 + exp(-x)), elementwise, in place.

ncnn clamps x to +-88.376 (where expf stops being finite) before the exp; so do we, which
also keeps the intermediate finite.
"""

from __future__ import annotations

import numpy as np

from ._elementwise import Elementwise, negate

EXP_LIMIT = np.float32(88.3762626647949)
_ONE = np.float32(1.0)


def sigmoid(x, out) -> None:
    """out = 1 / (1 + exp(-clamp(x))); ``x`` may be ``out``."""
    np.clip(x, -EXP_LIMIT, EXP_LIMIT, out=out)
    negate(out, out)
    np.exp(out, out=out)
    out += _ONE
    np.reciprocal(out, out=out)


class Sigmoid(Elementwise):
    def apply(self, x, out) -> int:
        sigmoid(x, out)
        return 0
