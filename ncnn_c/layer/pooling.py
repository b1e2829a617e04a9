"""Pooling (2-D max / average, fp32): global, adaptive and windowed with ncnn's pad modes.

pad_mode 0 ("full") adds extra right/bottom padding so that the last partial window
still produces an output (ceil-style output size); 1 pads only as the params say; 2/3
compute TensorFlow/ONNX SAME pads. For average pooling without count_include_pad the
divisor counts the cells inside [pad_top, h + pad_top) x [pad_left, w + pad_left) of the
padded input, where the pads are the layer's params — so in modes 2/3 the computed SAME
pads are counted as real cells, as ncnn does.

Adaptive pooling gives output cell i the input span [floor(i*n/out), ceil((i+1)*n/out)),
as ncnn (and PyTorch) do; the spans are taken tap by tap over gathered rows and columns,
separably, since both max and sum separate. A 2-D blob pools as one channel.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np

from .._native.cpu import cpu_kernels
from ..mat import Mat
from . import Param, param_error
from ._conv import channel_rows
from ._geometry import Window, copy_make_border, same_padding

log = logging.getLogger("ncnn_c")

FLT_MAX = float(np.finfo(np.float32).max)


def _overlap(starts: np.ndarray, kernel: int, lo: int, hi: int) -> np.ndarray:
    """How many cells of each window [s, s + kernel) fall in [lo, hi)."""
    return np.clip(np.minimum(starts + kernel, hi) - np.maximum(starts, lo), 0, None)


def _tail_pad(extent: int, stride: int) -> int:
    """ncnn's full-padding tail: stride minus C's remainder (which keeps the sign of ``extent``)."""
    tail = int(math.fmod(extent, stride))
    return stride - tail if tail else 0


def _adaptive_spans(n: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(out)
    return n * i // out, -(-n * (i + 1) // out)


def _adaptive_reduce(x: np.ndarray, axis: int, out: int, is_max: bool) -> np.ndarray:
    """Reduce ``axis`` of x (c, h, w) to ``out`` adaptive spans: max, or sum / span length."""
    n = x.shape[axis]
    start, stop = _adaptive_spans(n, out)
    length = stop - start
    acc = None
    for k in range(int(length.max())):
        valid = start + k < stop
        # past its span a cell re-reads its last element: harmless for max, masked for sum
        tap = np.take(x, np.minimum(start + k, stop - 1), axis=axis)
        if not is_max and not valid.all():
            shape = [1, 1, 1]
            shape[axis] = out
            tap = tap * valid.reshape(shape)
        if acc is None:
            acc = tap
        elif is_max:
            np.maximum(acc, tap, out=acc)
        else:
            acc += tap
    assert acc is not None
    if not is_max:
        shape = [1, 1, 1]
        shape[axis] = out
        acc /= length.astype(np.float32).reshape(shape)
    return acc


class Pooling(Window):
    # set by load_param from PARAMS; declared for the type checker
    pooling_type: int
    kernel_w: int
    stride_w: int
    pad_left: int
    global_pooling: int
    pad_mode: int
    avgpool_count_include_pad: int
    adaptive_pooling: int
    out_w: int
    kernel_h: int
    stride_h: int
    pad_top: int
    pad_right: int
    pad_bottom: int
    out_h: int

    PARAMS = (
        Param(0, "pooling_type", 0),
        Param(1, "kernel_w", 0),
        Param(2, "stride_w", 1),
        Param(3, "pad_left", 0),
        Param(4, "global_pooling", 0),
        Param(5, "pad_mode", 0),
        Param(6, "avgpool_count_include_pad", 0),
        Param(7, "adaptive_pooling", 0),
        Param(8, "out_w", 0),
        Param(11, "kernel_h", "kernel_w"),
        Param(12, "stride_h", "stride_w"),
        Param(13, "pad_top", "pad_left"),
        Param(14, "pad_right", "pad_left"),
        Param(15, "pad_bottom", "pad_top"),
        Param(18, "out_h", "out_w"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        if self.pooling_type not in (0, 1):
            log.error("Pooling %r: unknown pooling_type %d", self.name, self.pooling_type)
            return -1
        if self.pad_mode not in (0, 1, 2, 3):
            log.error("Pooling %r: unknown pad_mode %d", self.name, self.pad_mode)
            return -1
        if self.global_pooling:
            return 0
        if self.adaptive_pooling:
            if (self.out_w <= 0 and self.out_w != -233) or (self.out_h <= 0 and self.out_h != -233):
                log.error("Pooling %r: bad adaptive output size %dx%d", self.name, self.out_w, self.out_h)
                return -1
            return 0
        for key in ("kernel_w", "kernel_h", "stride_w", "stride_h"):
            if getattr(self, key) <= 0:
                return param_error(self, key, "must be positive")
        return 0

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        if bottom.elempack != 1 or bottom.dims not in (2, 3):
            log.error(
                "Pooling %r: needs a 2-D or 3-D fp32 blob with elempack 1, got dims %d elempack %d",
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        x = bottom.tensor()
        if x.ndim == 2:
            # ncnn pools a 2-D blob as one channel and gives a 3-D (or global: 1-D) result
            x = x[None]
        c, h, w = x.shape
        is_max = self.pooling_type == 0
        if self.global_pooling:
            top.create(c, elemsize=4, elempack=1, allocator=opt.blob_allocator)
            if top.empty():
                return -100
            dst = top.tensor()
            native = cpu_kernels()
            threads = max(1, int(getattr(opt, "num_threads", 1) or 1))
            if native is not None and native.global_pool(x, dst, is_max, threads):
                if not is_max:
                    dst /= np.float32(h * w)
                return 0
            # one reduction along contiguous rows of h*w when the channels allow it (cstep
            # may pad between them): several times cheaper than over two axes
            rows = channel_rows(x)
            src, axes = (rows, 1) if rows is not None else (x, (1, 2))
            if is_max:
                np.max(src, axis=axes, out=dst)
            else:
                np.sum(src, axis=axes, dtype=np.float32, out=dst)
                dst /= np.float32(h * w)
            return 0
        if self.adaptive_pooling:
            out_h = h if self.out_h == -233 else self.out_h
            out_w = w if self.out_w == -233 else self.out_w
            if (out_h, out_w) == (h, w):
                # ncnn passes the blob through, so a 2-D input stays 2-D here
                top.share_from(bottom)
                return 0
            top.create(out_w, out_h, c, elemsize=4, elempack=1, allocator=opt.blob_allocator)
            if top.empty():
                return -100
            rows = _adaptive_reduce(x, 1, out_h, is_max)
            top.tensor()[...] = _adaptive_reduce(rows, 2, out_w, is_max)
            return 0
        return self._windowed(x, top, is_max, opt)

    def pads(self, size: Sequence[int], kernel: Sequence[int] | None = None) -> tuple[int, ...]:
        """(top, bottom, left, right) padding for an (h, w) input, per pad_mode."""
        h, w = size
        t, b, l, r = self.pad_top, self.pad_bottom, self.pad_left, self.pad_right
        if self.pad_mode == 0:
            # extend right/bottom so that (size - kernel) divides by the stride
            b += _tail_pad(h + t + b - self.kernel_h, self.stride_h)
            r += _tail_pad(w + l + r - self.kernel_w, self.stride_w)
        elif self.pad_mode in (2, 3):
            return same_padding(size, self.extents(), (self.stride_h, self.stride_w), self.pad_mode == 2)
        return t, b, l, r

    def _windowed(self, x: np.ndarray, top: Mat, is_max: bool, opt) -> int:
        c, h, w = x.shape
        kh, kw, sh, sw = self.kernel_h, self.kernel_w, self.stride_h, self.stride_w
        t, b, l, r = self.pads((h, w))
        hp, wp = h + t + b, w + l + r
        out = self.output_shape((h, w), (t, b, l, r))
        if out is None:
            return -1
        outh, outw = out
        exclude_pad = not is_max and not self.avgpool_count_include_pad
        y0, y1, x0, x1 = t, t + h, l, l + w
        if exclude_pad:
            # the cells that count are those inside the layer's own pads, not the extra tail
            # of pad_mode 0; in modes 2/3 that region need not be the input (module docstring)
            tail_h = hp - h - self.pad_top - self.pad_bottom if self.pad_mode == 0 else 0
            tail_w = wp - w - self.pad_left - self.pad_right if self.pad_mode == 0 else 0
            y0, y1 = self.pad_top, hp - self.pad_bottom - tail_h
            x0, x1 = self.pad_left, wp - self.pad_right - tail_w
        top.create(outw, outh, c, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        acc = top.tensor()
        self._taps(x, acc, (t, b, l, r), (y0, y1, x0, x1), is_max, opt)
        if is_max:
            return 0
        if not exclude_pad:
            acc /= np.float32(kh * kw)
            return 0
        rows = _overlap(np.arange(outh) * sh, kh, y0, y1)
        cols = _overlap(np.arange(outw) * sw, kw, x0, x1)
        area = (rows[:, None] * cols[None, :]).astype(np.float32)
        # a window wholly outside the region gives 0/0 = nan, as in ncnn
        with np.errstate(invalid="ignore", divide="ignore"):
            acc /= area
        return 0

    def _taps(self, x, acc, pads, region, is_max: bool, opt) -> None:
        """Max / sum of the window taps into ``acc``: the native kernel when the counted region
        is the input itself, else one vectorised pass per kernel tap over strided views of the
        bordered input (cheaper than per-tap sub-ranges of the unpadded input, measured: the
        border copy is small next to the kh*kw strided passes)."""
        t, b, l, r = pads
        y0, y1, x0, x1 = region
        value = -FLT_MAX if is_max else 0.0
        if (y0, y1, x0, x1) == (t, t + x.shape[1], l, l + x.shape[2]):
            native = cpu_kernels()
            geom = (self.kernel_w, self.kernel_h, self.stride_w, self.stride_h)
            threads = max(1, int(getattr(opt, "num_threads", 1) or 1))
            if native is not None and native.pool(x, acc, pads, value, geom, is_max, threads):
                return
        _ws, xp = copy_make_border(x, t, b, l, r, -FLT_MAX if is_max else 0.0, opt)
        if (y0, y1, x0, x1) != (t, t + x.shape[1], l, l + x.shape[2]):
            # real cells outside the counted region are left out of the sum as well
            xp = xp.copy() if xp is x else xp
            xp[:, : max(y0, 0)] = 0.0
            xp[:, max(y1, 0) :] = 0.0
            xp[:, :, : max(x0, 0)] = 0.0
            xp[:, :, max(x1, 0) :] = 0.0
        outh, outw = acc.shape[1:]
        sh, sw = self.stride_h, self.stride_w
        first = True
        for ky in range(self.kernel_h):
            for kx in range(self.kernel_w):
                tap = xp[:, ky : ky + sh * (outh - 1) + 1 : sh, kx : kx + sw * (outw - 1) + 1 : sw]
                if first:
                    acc[...] = tap
                    first = False
                elif is_max:
                    np.maximum(acc, tap, out=acc)
                else:
                    np.add(acc, tap, out=acc)
