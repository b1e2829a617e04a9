"""Eltwise: combine two or more blobs of one shape elementwise: product, (weighted) sum or max.

``coeffs`` (param 1) weights the inputs of a sum, one coefficient per input; without it the
inputs are added as they are. The other operations ignore it.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param
from ._elementwise import padded_flat

log = logging.getLogger("ncnn_c")

PROD, SUM, MAX = 0, 1, 2


class Eltwise(Layer):
    PARAMS = (Param(0, "op_type", 0), Param(1, "coeffs", kind="floats"))
    op_type: int
    coeffs: np.ndarray

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        if self.op_type not in (PROD, SUM, MAX):
            log.error("Eltwise %r: unknown op_type %d", self.name, self.op_type)
            return -1
        return 0

    def forward(self, bottoms, tops, opt) -> int:
        xs = [b.tensor() for b in bottoms]
        if len(xs) < 2:
            log.error("Eltwise %r: needs at least two input blobs, got %d", self.name, len(xs))
            return -1
        if any(x.shape != xs[0].shape for x in xs):
            log.error("Eltwise %r: input shapes differ: %s", self.name, [x.shape for x in xs])
            return -1
        weighted = self.op_type == SUM and self.coeffs.size > 0
        if weighted and self.coeffs.size < len(xs):
            log.error("Eltwise %r: %d coeffs for %d input blobs", self.name, self.coeffs.size, len(xs))
            return -1
        top = tops[0]
        top.create(*xs[0].shape[::-1], elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        if xs[0].ndim >= 3 and all(b.cstep == top.cstep for b in bottoms):
            # one contiguous pass over the padded storage instead of a walk over small channels
            flat = [padded_flat(b) for b in bottoms]
            fo = padded_flat(top)
            if fo is not None and all(f is not None for f in flat):
                xs, out = flat, fo
        # inf and nan propagate as IEEE arithmetic says, silently, as in ncnn
        with np.errstate(over="ignore", invalid="ignore"):
            self._combine(xs, out, weighted)
        return 0

    def _combine(self, xs, out, weighted: bool) -> None:
        if self.op_type == PROD:
            np.multiply(xs[0], xs[1], out=out)
            for x in xs[2:]:
                np.multiply(out, x, out=out)
        elif self.op_type == MAX:
            np.maximum(xs[0], xs[1], out=out)
            for x in xs[2:]:
                np.maximum(out, x, out=out)
        elif weighted:
            c = self.coeffs
            np.multiply(xs[0], c[0], out=out)
            out += xs[1] * c[1]
            for i in range(2, len(xs)):
                out += xs[i] * c[i]
        else:
            np.add(xs[0], xs[1], out=out)
            for x in xs[2:]:
                np.add(out, x, out=out)
