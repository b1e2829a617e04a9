"""Log: y = log_base(shift + x * scale), natural log when base is -1 (params 0..2), in place."""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise
from .exp import affine


class Log(Elementwise):
    PARAMS = (Param(0, "base", -1.0), Param(1, "scale", 1.0), Param(2, "shift", 0.0))

    def apply(self, x, out) -> int:
        affine(x, out, self.scale, self.shift)
        np.log(out, out=out)
        if self.base != -1.0:
            # ncnn multiplies by a float32 1 / log(base), computed once
            out *= np.float32(1.0) / np.log(np.float32(self.base))
        return 0
