"""Reduction: reduce a blob over some axes with one of eleven operations, then scale by ``coeff``.

Axes (param 3) count in numpy order of the blob (0 is channels for a 3-D blob, rows for a
2-D one; negative from the end); ``reduce_all`` (param 1, on by default) reduces over every
axis and ignores them. A 1-D blob is always reduced whole. Without ``keepdims`` the reduced
axes disappear (a blob reduced to nothing is a 1-D blob of one value); with it they stay as 1.

``coeff`` multiplies the result after the operation (after the log of LogSum / LogSumExp
and the root of L2), not the input. LogSumExp is log(sum(exp(x))) without ncnn subtracting
the maximum first, so it overflows to inf where ncnn does.

Param 5 ``fixbug0``: early converters wrote axes counting a batch axis; ncnn refuses a param
with axes unless it is marked fixed (5=1), and so do we.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param

log = logging.getLogger("ncnn_c")

FLT_MIN = np.float32(np.finfo(np.float32).tiny)

SUM, ASUM, SUMSQ, MEAN, MAX, MIN, PROD, L1, L2, LOGSUM, LOGSUMEXP = range(11)


class Reduction(Layer):
    PARAMS = (
        Param(0, "operation", 0),
        Param(1, "reduce_all", 1),
        Param(2, "coeff", 1.0),
        Param(3, "axes", kind="ints"),
        Param(4, "keepdims", 0),
        Param(5, "fixbug0", 0),
    )
    operation: int
    reduce_all: int
    coeff: float
    axes: np.ndarray
    keepdims: int
    fixbug0: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        if not 0 <= self.operation <= LOGSUMEXP:
            log.error("Reduction %r: unknown operation %d", self.name, self.operation)
            return -1
        if self.fixbug0 == 0 and self.axes.size:
            log.error(
                "Reduction %r: axes without fixbug0=1 are from a too old converter, regenerate the param",
                self.name,
            )
            return -1
        return 0

    def reduced_axes(self, dims: int) -> tuple[int, ...] | None:
        """The numpy axes this layer reduces for a ``dims``-D blob; None (logged) if invalid."""
        if self.reduce_all or dims == 1:
            return tuple(range(dims))
        axes = set()
        for a in self.axes.tolist():
            if not -dims <= a < dims:
                log.error("Reduction %r: axis %d out of range for a %d-D blob", self.name, a, dims)
                return None
            axes.add(a % dims)
        if not axes:
            # ncnn leaves the output unwritten here; refuse rather than return garbage
            log.error("Reduction %r: reduce_all=0 and no axes: nothing to reduce", self.name)
            return None
        return tuple(sorted(axes))

    def output_shape(self, shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
        """numpy shape of the result of reducing ``axes`` of a blob of numpy ``shape``."""
        if self.keepdims:
            return tuple(1 if i in axes else n for i, n in enumerate(shape))
        return tuple(n for i, n in enumerate(shape) if i not in axes) or (1,)

    def forward(self, bottom, top, opt) -> int:
        x = bottom.tensor()
        if bottom.dims not in (1, 2, 3, 4):
            log.error("Reduction %r: needs a 1-4 D blob, got dims %d", self.name, bottom.dims)
            return -1
        axes = self.reduced_axes(bottom.dims)
        if axes is None:
            return -1
        op = self.operation
        with np.errstate(all="ignore"):
            if op in (SUM, MEAN, LOGSUM):
                r = np.sum(x, axis=axes, keepdims=True)
            elif op in (ASUM, L1):
                r = np.sum(np.abs(x), axis=axes, keepdims=True)
            elif op in (SUMSQ, L2):
                r = np.sum(np.square(x), axis=axes, keepdims=True)
            elif op == MAX:
                r = np.max(x, axis=axes, keepdims=True)
            elif op == MIN:
                r = np.min(x, axis=axes, keepdims=True)
            elif op == PROD:
                r = np.prod(x, axis=axes, keepdims=True)
            else:  # LOGSUMEXP
                r = np.sum(np.exp(x), axis=axes, keepdims=True)
            if op in (LOGSUM, LOGSUMEXP):
                np.log(r, out=r)
            elif op == L2:
                # ncnn flushes subnormal sums to zero before the root
                r[r < FLT_MIN] = 0
                np.sqrt(r, out=r)
            coeff = self.coeff
            if op == MEAN:
                coeff /= int(np.prod([x.shape[a] for a in axes]))
            if coeff != 1.0:
                np.multiply(r, np.float32(coeff), out=r)

        shape = self.output_shape(x.shape, axes)
        top.create(*shape[::-1], elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        top.tensor()[...] = r.reshape(shape)
        return 0
