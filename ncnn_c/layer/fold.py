"""Fold (col2im): the inverse arrangement of Unfold — a 2-D blob of rows [channel][ky][kx]
and one column per window position is summed back into a (channels, output_h, output_w)
image (overlapping windows add up), then the pads are cut off. The window count per axis is
``_geometry.output_shape`` of the padded output size, and must match the input's columns."""

from __future__ import annotations

import itertools
import logging
from typing import ClassVar

import numpy as np

from . import Param
from ._geometry import WINDOW_GEOMETRY_PARAMS, Window, output_shape, show
from ._window_nd import create_top

log = logging.getLogger("ncnn_c")


class Fold(Window):
    AXES = "hw"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        *WINDOW_GEOMETRY_PARAMS,
        Param(20, "output_w", 0),
        Param(21, "output_h", "output_w"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        for name in ("kernel", "dilation", "stride", "output"):
            for a, v in reversed(list(zip(self.AXES, self._per_axis(name, 0), strict=True))):
                if v <= 0:
                    log.error("%s %r: %s_%s must be positive, got %d", self.type, self.name, name, a, v)
                    return -1
        if any(p < 0 for p in self.explicit_pads()):
            log.error("%s %r: pad values %s must not be negative", self.type, self.name, self.explicit_pads())
            return -1
        return 0

    def forward(self, bottom, top, opt) -> int:
        if bottom.dims != 2 or bottom.elempack != 1:
            log.error(
                "%s %r: needs a 2-D fp32 blob with elempack 1, got dims %d elempack %d",
                self.type,
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        x = np.asarray(bottom.tensor(), dtype=np.float32)
        kernel, dilation, stride = (
            self._per_axis("kernel"),
            self._per_axis("dilation"),
            self._per_axis("stride"),
        )
        maxk = kernel[0] * kernel[1]
        pads = self.explicit_pads()
        size = self._per_axis("output", 0)
        full = tuple(n + pads[2 * i] + pads[2 * i + 1] for i, n in enumerate(size))
        windows = output_shape(size, self.extents(), stride, pads)
        if x.shape[0] % maxk or min(windows) <= 0 or windows[0] * windows[1] != x.shape[1]:
            log.error(
                "%s %r: input %dx%d is not %d kernel taps x %s windows of a %s output",
                self.type,
                self.name,
                x.shape[1],
                x.shape[0],
                maxk,
                show(windows),
                show(size),
            )
            return -1
        channels = x.shape[0] // maxk
        cols = x.reshape(channels, kernel[0], kernel[1], windows[0], windows[1])
        acc = np.zeros((channels, *full), dtype=np.float32)
        for ky, kx in itertools.product(range(kernel[0]), range(kernel[1])):
            y0, x0 = ky * dilation[0], kx * dilation[1]
            acc[
                :,
                y0 : y0 + stride[0] * (windows[0] - 1) + 1 : stride[0],
                x0 : x0 + stride[1] * (windows[1] - 1) + 1 : stride[1],
            ] += cols[:, ky, kx]
        dst = create_top(top, (channels, *size), opt)
        if dst is None:
            return -100
        dst[...] = acc[:, pads[0] : pads[0] + size[0], pads[2] : pads[2] + size[1]]
        return 0
