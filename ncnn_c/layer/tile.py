"""Tile: repeat the blob along its axes.

Two forms, as in ncnn. Without ``repeats`` (param 2), ``tiles`` (param 1) copies along
``axis`` (param 0, counted in numpy order of the blob; a 1-D blob ignores it). With
``repeats`` (an int array of 1-4 entries, numpy.tile style) they are aligned to the
innermost axes: 1 entry w; 2 h, w; 3 c, h, w (d, h, w for a 4-D blob); 4 c, d, h, w; the
output has max(dims, len(repeats)) dims. ncnn's one departure from numpy: a 3-D blob tiled
with 4 repeats keeps its channels on the channel axis (c*r0, r1, h*r2, w*r3).

All-ones repeats of the blob's own rank pass the blob through unchanged.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class Tile(Layer):
    PARAMS = (Param(0, "axis", 0), Param(1, "tiles", 1), Param(2, "repeats", kind="ints"))
    axis: int
    tiles: int
    repeats: np.ndarray

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        if self.repeats.size:
            if self.repeats.size > 4 or (self.repeats < 1).any():
                log.error("Tile %r: repeats %s must be 1-4 counts >= 1", self.name, self.repeats.tolist())
                return -1
        elif self.tiles < 1:
            log.error("Tile %r: tiles %d must be >= 1", self.name, self.tiles)
            return -1
        return 0

    def _counts(self, dims: int) -> tuple[int, int, int, int] | None:
        """(c, d, h, w) repeat counts for a ``dims``-D blob; None (logged) for a bad axis."""
        rep = self.repeats.tolist()
        if rep:
            padded = [1] * (4 - len(rep)) + rep
            if len(rep) == 3 and dims == 4:  # d, h, w
                return 1, rep[0], rep[1], rep[2]
            if len(rep) == 3:  # c, h, w
                return rep[0], 1, rep[1], rep[2]
            c, d, h, w = padded
            return c, d, h, w
        if dims == 1:
            return 1, 1, 1, self.tiles
        if not 0 <= self.axis < dims:
            log.error("Tile %r: axis %d out of range for a %d-D blob", self.name, self.axis, dims)
            return None
        # the blob's numpy axes, then their place among (c, d, h, w)
        slot = {2: (2, 3), 3: (0, 2, 3), 4: (0, 1, 2, 3)}[dims][self.axis]
        counts = [1, 1, 1, 1]
        counts[slot] = self.tiles
        return counts[0], counts[1], counts[2], counts[3]

    def forward(self, bottom, top, opt) -> int:
        dims = bottom.dims
        if not 1 <= dims <= 4 or bottom.elempack != 1:
            log.error("Tile %r: needs a 1-4 D blob of elempack 1, got dims %d", self.name, dims)
            return -1
        counts = self._counts(dims)
        if counts is None:
            return -1
        outdims = max(dims, self.repeats.size)
        if counts == (1, 1, 1, 1) and outdims == dims:
            top.share_from(bottom)
            return 0
        x4 = bottom.tensor().reshape(bottom.c, bottom.d, bottom.h, bottom.w)
        out4 = np.tile(x4, counts)
        c, d, h, w = out4.shape
        shape = ((w,), (w, h), (w, h, c), (w, h, d, c))[outdims - 1]
        top.create(*shape, elemsize=bottom.elemsize, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        np.copyto(top.tensor(), out4.reshape(top.tensor().shape))
        return 0
