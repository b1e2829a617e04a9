"""PReLU: y = x for x >= 0, slope * x below, in place.

Param 0 num_slope: 1 shares one slope over the whole blob; more gives one slope per index of
ncnn's channel axis (elements of a 1-D blob, rows of a 2-D one, channels of 3-D / 4-D).
"""

from __future__ import annotations

import logging

import numpy as np

from . import Param
from ._elementwise import Elementwise, load_vector, per_axis0

log = logging.getLogger("ncnn_c")

_ZERO = np.float32(0.0)


def leaky(x, out, slope) -> None:
    """out = x where x >= 0, x * slope below (slope a scalar or broadcasting array).

    The sum of the two halves, each zero where the other applies: no mask, and ``x`` may be
    ``out``.
    """
    neg = np.minimum(x, _ZERO)
    neg *= slope
    np.maximum(x, _ZERO, out=out)
    out += neg


class PReLU(Elementwise):
    PARAMS = (Param(0, "num_slope", 0),)
    per_channel = True

    def __init__(self) -> None:
        super().__init__()
        self.slope_data = np.zeros(0, np.float32)

    def check_params(self) -> int:
        if self.num_slope < 1:
            log.error("PReLU %r: num_slope %d must be positive", self.name, self.num_slope)
            return -1
        return 0

    def load_model(self, mb) -> int:
        slopes = load_vector(self, mb, self.num_slope, "slope")
        if slopes is None:
            return -100
        self.slope_data = slopes
        return 0

    def channel_coeffs(self, m):
        if len(self.slope_data) == 1 or self.num_slope == 1:
            return (self.slope_data[0],)
        slopes = per_axis0(self, m, self.slope_data, "slopes")
        return None if slopes is None else (slopes,)

    def apply(self, x, out, slope) -> int:
        leaky(x, out, slope)
        return 0
