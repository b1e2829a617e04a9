"""Squeeze: drop size-1 dims, chosen by flags (squeeze_w/h/d/c) or by an axes array.

Only dims of size 1 go; a chosen dim of another size stays, as in ncnn. Squeezing every dim
leaves a 1-element 1-D blob.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param
from .reshape import numpy_shape, share_reshaped

log = logging.getLogger("ncnn_c")

# ncnn's dim names in numpy axis order, per input rank
_AXIS_NAMES = {1: "w", 2: "hw", 3: "chw", 4: "cdhw"}


class Squeeze(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    squeeze_w: int
    squeeze_h: int
    squeeze_d: int
    squeeze_c: int
    axes: np.ndarray

    PARAMS = (
        Param(0, "squeeze_w", 0),
        Param(1, "squeeze_h", 0),
        Param(11, "squeeze_d", 0),
        Param(2, "squeeze_c", 0),
        Param(3, "axes", kind="ints"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def out_shape(self, bottom) -> tuple[int, ...] | None:
        """The numpy shape of the output for a blob with ``bottom``'s dims and sizes; None
        (logged) when an axis is out of range."""
        dims = bottom.dims
        shape = numpy_shape(bottom)
        if self.axes.size:
            chosen = set()
            for a in self.axes.tolist():
                axis = a + dims if a < 0 else a
                if not 0 <= axis < dims:
                    log.error("Squeeze %r: axis %d out of range for %d-D input", self.name, a, dims)
                    return None
                chosen.add(axis)
        else:
            flags = {"w": self.squeeze_w, "h": self.squeeze_h, "d": self.squeeze_d, "c": self.squeeze_c}
            chosen = {i for i, n in enumerate(_AXIS_NAMES[dims]) if flags[n]}
        return tuple(s for i, s in enumerate(shape) if not (i in chosen and s == 1)) or (1,)

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        out = self.out_shape(bottom)
        if out is None:
            return -1
        if out == numpy_shape(bottom):
            top.share_from(bottom)
            return 0
        return share_reshaped(self, bottom, top, out, opt)
