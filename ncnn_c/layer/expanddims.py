"""ExpandDims: insert size-1 dims at the given axes (param 3, counted in the output's rank).

ncnn's older expand_w/h/c flags (params 0-2) are gone from its ExpandDims; like it, we only
read the axes array.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param
from .reshape import numpy_shape, share_reshaped

log = logging.getLogger("ncnn_c")


class ExpandDims(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    axes: np.ndarray

    PARAMS = (Param(3, "axes", kind="ints"),)

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def out_shape(self, bottom) -> tuple[int, ...] | None:
        """The numpy shape of the output for a blob with ``bottom``'s dims and sizes; None
        (logged) when the axes do not fit."""
        shape = numpy_shape(bottom)
        outdims = len(shape) + self.axes.size
        axes = {a + outdims if a < 0 else a for a in self.axes.tolist()}
        if outdims > 4 or len(axes) != self.axes.size or not all(0 <= a < outdims for a in axes):
            log.error(
                "ExpandDims %r: cannot insert axes %s into a %d-D input",
                self.name,
                self.axes.tolist(),
                len(shape),
            )
            return None
        rest = iter(shape)
        return tuple(1 if i in axes else next(rest) for i in range(outdims))

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        out = self.out_shape(bottom)
        if out is None:
            return -1
        if len(out) == bottom.dims:
            top.share_from(bottom)
            return 0
        return share_reshaped(self, bottom, top, out, opt)
