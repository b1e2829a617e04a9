"""BatchNorm at inference: y = (x - mean) / sqrt(var + eps) * slope + bias, per channel, in place.

Param 0 channels, 1 eps; weights slope, mean, var, bias (raw fp32, ``channels`` each). As in
ncnn they fold into one multiply-add per element, b * x + a, computed once at load; a zero
sqrt(var + eps) is replaced by 1e-4, as ncnn does, instead of dividing by zero. The channel
axis is ncnn's: elements of a 1-D blob, rows of a 2-D one, channels of 3-D / 4-D.
"""

from __future__ import annotations

import numpy as np

from . import POSITIVE, Param
from ._elementwise import Elementwise, load_vector, per_axis0


class BatchNorm(Elementwise):
    PARAMS = (Param(0, "channels", 0, valid=POSITIVE), Param(1, "eps", 0.0))
    per_channel = True

    def __init__(self) -> None:
        super().__init__()
        self.a_data = np.zeros(0, np.float32)
        self.b_data = np.zeros(0, np.float32)

    def load_model(self, mb) -> int:
        loaded = []
        for what in ("slope", "mean", "var", "bias"):
            v = load_vector(self, mb, self.channels, what)
            if v is None:
                return -100
            loaded.append(v)
        slope, mean, var, bias = loaded
        sqrt_var = np.sqrt(var + np.float32(self.eps))
        sqrt_var[sqrt_var == 0] = np.float32(0.0001)
        self.b_data = slope / sqrt_var
        self.a_data = bias - slope * mean / sqrt_var
        return 0

    def channel_coeffs(self, m):
        b = per_axis0(self, m, self.b_data, "channels")
        if b is None:
            return None
        return b, self.a_data[: len(b)]

    def apply(self, x, out, b, a) -> int:
        np.multiply(x, b, out=out)
        out += a
        return 0
