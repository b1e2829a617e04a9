"""SELU: y = lambda * x for x >= 0, lambda * alpha * (exp(x) - 1) below, in place.

Defaults (params 0 alpha, 1 lambda) are the self-normalising constants ncnn uses.
"""

from __future__ import annotations

import numpy as np

from . import Param
from ._elementwise import Elementwise
from .elu import exp_linear


class SELU(Elementwise):
    PARAMS = (Param(0, "alpha", 1.67326324), Param(1, "lambda_", 1.050700987))

    def apply(self, x, out) -> int:
        lam = float(np.float32(self.lambda_))
        # ncnn folds alpha * lambda into one float first
        exp_linear(x, out, lam, float(np.float32(self.alpha) * np.float32(lam)))
        return 0
