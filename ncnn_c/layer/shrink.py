"""Shrink: y = x + bias below -lambd, x - bias above lambd, 0 in between (params 0 bias 0,
1 lambd 0.5), in place.

ncnn's operator table says "else y = x"; its code (and the PyPI build) gives 0, which is
what ONNX Shrink means, so we give 0. NaN compares false both ways and becomes 0 too.
"""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise

_ZERO = np.float32(0.0)


class Shrink(Elementwise):
    PARAMS = (Param(0, "bias", 0.0), Param(1, "lambd", 0.5))

    def apply(self, x, out) -> int:
        lambd = np.float32(self.lambd)
        bias = np.float32(self.bias)
        below = x < -lambd
        # ncnn tests x < -lambd first: with a negative lambd both hold in between
        above = (x > lambd) & ~below
        # both masks are taken before out (possibly x itself) is written
        np.subtract(x, bias, out=out, where=above)
        np.add(x, bias, out=out, where=below)
        np.copyto(out, _ZERO, where=~(below | above))
        return 0
