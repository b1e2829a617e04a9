"""AbsVal: y = |x|, elementwise, in place."""

from __future__ import annotations

import numpy as np

from ._elementwise import Elementwise


class AbsVal(Elementwise):
    def apply(self, x, out) -> int:
        np.abs(x, out=out)
        return 0
