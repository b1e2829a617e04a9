"""Mish: y = x * tanh(log(1 + exp(x))), elementwise, in place.

ncnn forms ``1 + exp(x)`` in float32 before the log (not log1p), which for x around -6
is off by a few 1e-5 relative from the exact softplus; we round the same way so single
values match it. Where exp overflows, log gives inf and tanh 1: y = x, as ncnn's cut-off.
"""

from __future__ import annotations

import numpy as np

from ._elementwise import Elementwise

_ONE = np.float32(1.0)


class Mish(Elementwise):
    def apply(self, x, out) -> int:
        t = np.exp(x)
        t += _ONE
        np.log(t, out=t)
        np.tanh(t, out=t)
        np.multiply(x, t, out=out)
        return 0
