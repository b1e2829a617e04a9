"""Power: y = (shift + x * scale) ^ power (params 0 power, 1 scale, 2 shift), in place."""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise
from .exp import affine


class Power(Elementwise):
    PARAMS = (Param(0, "power", 1.0), Param(1, "scale", 1.0), Param(2, "shift", 0.0))

    def apply(self, x, out) -> int:
        affine(x, out, self.scale, self.shift)
        if self.power != 1.0:
            np.power(out, np.float32(self.power), out=out)
        return 0
