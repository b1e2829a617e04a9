"""Padding: grow a blob at its borders with a constant, the edge values, or a mirror image.

``left``/``right`` pad w, ``top``/``bottom`` pad h (2-D and up); ``front``/``behind`` pad
the channels of a 3-D blob or the depth of a 4-D one. Type 0 fills with ``value``, or with
one value per channel from the weight blob when ``per_channel_pad_data_size`` is set (3-D:
indexed by output channel, padded ones included; 4-D: by channel). Type 1 repeats the edge,
type 2 reflects without repeating it (numpy's "reflect"), so a reflect pad must be shorter
than the axis it mirrors. An int8 blob (a Quantize / Requantize top) is padded as int8, the
constant cast to int8 as C casts it (truncated), as ncnn's.
"""

from __future__ import annotations

import logging

import numpy as np

from .._native.cpu import cpu_kernels
from ..mat import Mat
from . import Layer, Param, load_weight
from ._int8 import int8_or_fp32
from .reshape import numpy_shape

log = logging.getLogger("ncnn_c")

CONSTANT, REPLICATE, REFLECT = 0, 1, 2


def _source_index(before: int, n: int, after: int, mode: int) -> tuple[np.ndarray, np.ndarray]:
    """For the pads of an axis of size n, which output positions mirror / repeat which.

    Returns (border positions, their source positions), both in output coordinates, so a
    border is filled from the already written interior of the output itself.
    """
    dst = np.r_[0:before, before + n : before + n + after]
    src = dst - before  # in input coordinates
    if mode == REPLICATE:
        src = np.clip(src, 0, n - 1)
    else:
        src = np.abs(src)
        src = (n - 1) - np.abs(src - (n - 1))
    return dst, src + before


class Padding(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    top: int
    bottom: int
    left: int
    right: int
    pad_type: int
    per_channel_pad_data_size: int
    front: int
    behind: int
    value: float

    PARAMS = (
        Param(0, "top", 0),
        Param(1, "bottom", 0),
        Param(2, "left", 0),
        Param(3, "right", 0),
        # "type" would shadow Layer.type (the layer type name)
        Param(4, "pad_type", CONSTANT, valid=(CONSTANT, REPLICATE, REFLECT)),
        Param(5, "value", 0.0),
        Param(6, "per_channel_pad_data_size", 0),
        Param(7, "front", 0),
        Param(8, "behind", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self.per_channel_pad_data = np.zeros(0, np.float32)

    def check_params(self) -> int:
        pads = (self.top, self.bottom, self.left, self.right, self.front, self.behind)
        if min(pads) < 0:
            log.error("Padding %r: negative pads %s", self.name, pads)
            return -1
        if self.per_channel_pad_data_size < 0:
            log.error(
                "Padding %r: per_channel_pad_data_size %d < 0", self.name, self.per_channel_pad_data_size
            )
            return -1
        return 0

    def load_model(self, mb) -> int:
        if self.per_channel_pad_data_size:
            m = load_weight(self, mb, "per_channel_pad_data", self.per_channel_pad_data_size, 1)
            if m.empty():
                return -100
            self.per_channel_pad_data = np.array(m.tensor(), dtype=np.float32).reshape(-1)
        return 0

    def pads(self, dims: int) -> list[tuple[int, int]]:
        """(before, after) per numpy axis of a ``dims``-D blob."""
        w = (self.left, self.right)
        h = (self.top, self.bottom)
        outer = (self.front, self.behind)
        return {1: [w], 2: [h, w], 3: [outer, h, w], 4: [(0, 0), outer, h, w]}[dims]

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        dims = bottom.dims
        pads = self.pads(dims)
        if all(p == (0, 0) for p in pads):
            top.share_from(bottom)
            return 0
        shape = numpy_shape(bottom)
        if self.pad_type == REFLECT and any(
            max(b, a) >= n for (b, a), n in zip(pads, shape, strict=True) if b or a
        ):
            log.error("Padding %r: reflect pads %s must be shorter than the axes %s", self.name, pads, shape)
            return -1
        value: float | np.ndarray = np.float32(self.value)
        if self.pad_type == CONSTANT and self.per_channel_pad_data_size and dims >= 3:
            # 3-D: one value per output channel; 4-D: per channel
            nvalues = shape[0] + pads[0][0] + pads[0][1]
            if self.per_channel_pad_data.size < nvalues:
                log.error(
                    "Padding %r: %d per-channel values for %d channels",
                    self.name,
                    self.per_channel_pad_data.size,
                    nvalues,
                )
                return -1
            value = self.per_channel_pad_data[:nvalues].reshape((nvalues,) + (1,) * (dims - 1))
        elemsize = int8_or_fp32(bottom)
        if elemsize == 1:
            value = int8_pad_value(value)
        outshape = tuple(n + b + a for n, (b, a) in zip(shape, pads, strict=True))
        top.create(*outshape[::-1], elemsize=elemsize, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        if (
            dims == 3
            and elemsize == 4
            and pads[0] == (0, 0)
            and not isinstance(value, np.ndarray)
            and self.pad_type == CONSTANT
        ):
            # a spatial constant border (BlazeFace's stride-2 pads): one native pass
            native = cpu_kernels()
            threads = max(1, int(getattr(opt, "num_threads", 1) or 1))
            if native is not None and native.pad(
                bottom.tensor(), out, self.top, self.left, float(value), threads
            ):
                return 0
        inner = tuple(slice(b, b + n) for n, (b, _) in zip(shape, pads, strict=True))
        out[inner] = bottom.tensor()
        # fill the borders axis by axis, innermost first: each pass reads the output itself,
        # whose later axes are complete and whose earlier axes still hold only the interior
        for axis in range(dims - 1, -1, -1):
            before, after = pads[axis]
            if not (before or after):
                continue
            n = shape[axis]
            lead = inner[:axis]
            if self.pad_type == CONSTANT:
                for sl in (slice(0, before), slice(before + n, before + n + after)):
                    if isinstance(value, np.ndarray):
                        # per-channel values follow the channels this slab spans
                        out[lead + (sl,)] = value[sl] if axis == 0 else value[inner[0]]
                    else:
                        out[lead + (sl,)] = value
                continue
            dst, src = _source_index(before, n, after, self.pad_type)
            region = out[lead]  # basic slicing: a view into the output
            index: list = [slice(None)] * dims
            index[axis] = dst
            region[tuple(index)] = np.take(region, src, axis=axis)
        return 0


def int8_pad_value(value):
    """A pad value (or per-channel values) as ``(signed char)value``: truncated, wrapped to 8
    bits as x86 converts (NaN and values beyond int32 give 0)."""
    v = np.asarray(value, np.float64)
    with np.errstate(invalid="ignore"):
        t = np.where(np.abs(v) < 2.0**31, np.trunc(v), 0.0)
    out = t.astype(np.int64).astype(np.int8)
    return out if out.ndim else np.int8(out)
