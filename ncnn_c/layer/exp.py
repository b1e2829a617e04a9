"""Exp: y = base ^ (shift + x * scale), natural exp when base is -1 (params 0..2), in place."""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise


def affine(x, out, scale: float, shift: float) -> None:
    """out = shift + x * scale, skipping the identity parts."""
    if scale != 1.0:
        np.multiply(x, np.float32(scale), out=out)
        x = out
    if shift != 0.0:
        np.add(x, np.float32(shift), out=out)
    elif x is not out:
        np.copyto(out, x)


class Exp(Elementwise):
    PARAMS = (Param(0, "base", -1.0), Param(1, "scale", 1.0), Param(2, "shift", 0.0))

    def apply(self, x, out) -> int:
        affine(x, out, self.scale, self.shift)
        if self.base == -1.0:
            np.exp(out, out=out)
        else:
            np.power(np.float32(self.base), out, out=out)
        return 0
