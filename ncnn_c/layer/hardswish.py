"""HardSwish: y = x * clamp(x * alpha + beta, 0, 1) (params 0 alpha 0.2, 1 beta 0.5), in place.

Clamped like ncnn's x86 SIMD code, see HardSigmoid.
"""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise
from .hardsigmoid import hard_gate


class HardSwish(Elementwise):
    PARAMS = (Param(0, "alpha", 0.2), Param(1, "beta", 0.5))

    def apply(self, x, out) -> int:
        gate = np.empty_like(x)
        hard_gate(x, gate, self.alpha, self.beta)
        np.multiply(x, gate, out=out)
        return 0
