"""HardSigmoid: y = clamp(x * alpha + beta, 0, 1) (params 0 alpha 0.2, 1 beta 0.5), in place.

ncnn's reference C++ picks the clamped parts by comparing x with the breakpoints, its x86
SIMD code (the PyPI build) clamps the result; we clamp. They differ only in the last bit at
the breakpoints, and for a negative alpha, where the clamp is what the formula says.
"""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


def hard_gate(x, out, alpha: float, beta: float) -> None:
    """out = clamp(x * alpha + beta, 0, 1); ``x`` may be ``out``."""
    np.multiply(x, np.float32(alpha), out=out)
    out += np.float32(beta)
    np.clip(out, _ZERO, _ONE, out=out)


class HardSigmoid(Elementwise):
    PARAMS = (Param(0, "alpha", 0.2), Param(1, "beta", 0.5))

    def apply(self, x, out) -> int:
        hard_gate(x, out, self.alpha, self.beta)
        return 0
