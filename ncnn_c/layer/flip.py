"""Flip: reverse the blob along each axis listed in ``axes`` (param 0, an int array, at most
4 entries, negative from the end); an empty list passes the blob through unchanged.

A 1-D blob is reversed whatever the list holds (as ncnn). ncnn writes out of bounds for an
axis outside the blob (or silently skips it); we refuse it.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")


class Flip(Layer):
    PARAMS = (Param(0, "axes", kind="ints"),)
    axes: np.ndarray

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        if self.axes.size > 4:
            log.error("Flip %r: axes has %d entries, at most 4", self.name, self.axes.size)
            return -1
        return 0

    def forward(self, bottom, top, opt) -> int:
        if self.axes.size == 0:
            top.share_from(bottom)
            return 0
        dims = bottom.dims
        if not 1 <= dims <= 4 or bottom.elempack != 1:
            log.error("Flip %r: needs a 1-4 D blob of elempack 1, got dims %d", self.name, dims)
            return -1
        for a in self.axes.tolist():
            if not -dims <= a < dims:
                log.error("Flip %r: axis %d out of range for a %d-D blob", self.name, a, dims)
                return -1
        axes = (0,) if dims == 1 else tuple(sorted({a % dims for a in self.axes.tolist()}))
        top.create_like(bottom, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        np.copyto(top.tensor(), np.flip(bottom.tensor(), axis=axes))
        return 0
