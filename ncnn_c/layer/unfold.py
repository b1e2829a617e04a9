"""Unfold (im2col): every kernel window of a 3-D blob as a column of a 2-D blob, rows ordered
[channel][ky][kx], columns the window positions (outh * outw). Padding and output size come
from ``Window`` (explicit pads filled with pad_value, or SAME -233 / -234)."""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from . import Param
from ._geometry import WINDOW_GEOMETRY_PARAMS, Window
from ._window_nd import create_top, pad_nd, taps

log = logging.getLogger("ncnn_c")


class Unfold(Window):
    AXES = "hw"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        *WINDOW_GEOMETRY_PARAMS,
        Param(18, "pad_value", 0.0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        for name in ("kernel", "dilation", "stride"):
            for a, v in reversed(list(zip(self.AXES, self._per_axis(name), strict=True))):
                if v <= 0:
                    log.error("%s %r: %s_%s must be positive, got %d", self.type, self.name, name, a, v)
                    return -1
        return 0

    def forward(self, bottom, top, opt) -> int:
        if bottom.dims != 3 or bottom.elempack != 1:
            log.error(
                "%s %r: needs a 3-D fp32 blob with elempack 1, got dims %d elempack %d",
                self.type,
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        x = np.asarray(bottom.tensor(), dtype=np.float32)
        pads = self.pads(x.shape[1:])
        out = self.output_shape(x.shape[1:], pads)
        if out is None:
            return -1
        xp = pad_nd(x, pads, self.pad_value)
        kernel = self._per_axis("kernel")
        cols = np.stack(
            list(taps(xp, kernel, self._per_axis("dilation"), self._per_axis("stride"), out)), axis=1
        )
        dst = create_top(top, (x.shape[0] * cols.shape[1], out[0] * out[1]), opt)
        if dst is None:
            return -100
        dst[...] = cols.reshape(dst.shape)
        return 0
