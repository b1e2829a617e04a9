"""Pooling (2-D max / average, fp32): global, adaptive and windowed with ncnn's pad modes.

pad_mode 0 ("full") adds extra right/bottom padding so that the last partial window
still produces an output (ceil-style output size); 1 pads only as the params say; 2/3
compute TensorFlow/ONNX SAME pads. For average pooling without count_include_pad the
divisor counts the cells inside [pad_top, h + pad_top) x [pad_left, w + pad_left) of the
padded input, where the pads are the layer's params — so in modes 2/3 the computed SAME
pads are counted as real cells, as ncnn does.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from . import Layer
from .convolution import copy_make_border, same_border

log = logging.getLogger("ncnn_c")

FLT_MAX = float(np.finfo(np.float32).max)


def _overlap(starts: np.ndarray, kernel: int, lo: int, hi: int) -> np.ndarray:
    """How many cells of each window [s, s + kernel) fall in [lo, hi)."""
    return np.clip(np.minimum(starts + kernel, hi) - np.maximum(starts, lo), 0, None)


def _tail_pad(extent: int, stride: int) -> int:
    """ncnn's full-padding tail: stride minus C's remainder (which keeps the sign of ``extent``)."""
    tail = int(math.fmod(extent, stride))
    return stride - tail if tail else 0


class Pooling(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def load_param(self, pd) -> int:
        self.pooling_type = pd.get(0, 0)
        self.kernel_w = pd.get(1, 0)
        self.stride_w = pd.get(2, 1)
        self.pad_left = pd.get(3, 0)
        self.global_pooling = pd.get(4, 0)
        self.pad_mode = pd.get(5, 0)
        self.avgpool_count_include_pad = pd.get(6, 0)
        self.adaptive_pooling = pd.get(7, 0)
        self.out_w = pd.get(8, 0)
        self.kernel_h = pd.get(11, self.kernel_w)
        self.stride_h = pd.get(12, self.stride_w)
        self.pad_top = pd.get(13, self.pad_left)
        self.pad_right = pd.get(14, self.pad_left)
        self.pad_bottom = pd.get(15, self.pad_top)
        self.out_h = pd.get(18, self.out_w)
        if self.pooling_type not in (0, 1):
            log.error("Pooling %r: unknown pooling_type %d", self.name, self.pooling_type)
            return -1
        if self.pad_mode not in (0, 1, 2, 3):
            log.error("Pooling %r: unknown pad_mode %d", self.name, self.pad_mode)
            return -1
        return 0

    def forward(self, bottom, top, opt) -> int:
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
        is_max = self.pooling_type == 0
        if self.global_pooling:
            out = (
                x.max(axis=(1, 2))
                if is_max
                else x.sum(axis=(1, 2), dtype=np.float32) / np.float32(x.shape[1] * x.shape[2])
            )
        elif self.adaptive_pooling:
            out = self._adaptive(x, is_max)
        else:
            out = self._windowed(x, is_max, opt)
            if out is None:
                return -1
        # Mat.create takes w, h, c: the numpy shape reversed
        top.create(*out.shape[::-1], elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        top.tensor()[...] = out
        return 0

    def _pads(self, h: int, w: int) -> tuple[int, int, int, int]:
        """(top, bottom, left, right) padding for the input size, per pad_mode."""
        t, b, l, r = self.pad_top, self.pad_bottom, self.pad_left, self.pad_right
        if self.pad_mode == 0:
            # extend right/bottom so that (size - kernel) divides by the stride
            b += _tail_pad(h + t + b - self.kernel_h, self.stride_h)
            r += _tail_pad(w + l + r - self.kernel_w, self.stride_w)
        elif self.pad_mode in (2, 3):
            return same_border(
                h, w, self.kernel_h, self.kernel_w, self.stride_h, self.stride_w, self.pad_mode == 2
            )
        return t, b, l, r

    def _windowed(self, x: np.ndarray, is_max: bool, opt=None) -> np.ndarray | None:
        c, h, w = x.shape
        kh, kw, sh, sw = self.kernel_h, self.kernel_w, self.stride_h, self.stride_w
        t, b, l, r = self._pads(h, w)
        _ws, xp = copy_make_border(x, t, b, l, r, -FLT_MAX if is_max else 0.0, opt)
        hp, wp = xp.shape[1:]
        outh = (hp - kh) // sh + 1
        outw = (wp - kw) // sw + 1
        if outh <= 0 or outw <= 0:
            log.error(
                "Pooling %r: input %dx%d (padded) is smaller than the kernel %dx%d", self.name, wp, hp, kw, kh
            )
            return None
        exclude_pad = not is_max and not self.avgpool_count_include_pad
        if exclude_pad:
            # the cells that count are those inside the layer's own pads, not the extra tail
            # of pad_mode 0; in modes 2/3 that region need not be the input (module docstring)
            tail_h = hp - h - self.pad_top - self.pad_bottom if self.pad_mode == 0 else 0
            tail_w = wp - w - self.pad_left - self.pad_right if self.pad_mode == 0 else 0
            y0, y1 = self.pad_top, hp - self.pad_bottom - tail_h
            x0, x1 = self.pad_left, wp - self.pad_right - tail_w
            if (y0, y1, x0, x1) != (t, t + h, l, l + w):
                # real cells outside the counted region are left out of the sum as well
                xp = xp.copy() if xp is x else xp
                xp[:, : max(y0, 0)] = 0.0
                xp[:, max(y1, 0) :] = 0.0
                xp[:, :, : max(x0, 0)] = 0.0
                xp[:, :, max(x1, 0) :] = 0.0
        # one vectorised pass per kernel tap (kh*kw passes over strided views)
        acc = None
        for ky in range(kh):
            for kx in range(kw):
                tap = xp[:, ky : ky + sh * (outh - 1) + 1 : sh, kx : kx + sw * (outw - 1) + 1 : sw]
                if acc is None:
                    acc = tap.copy()
                elif is_max:
                    np.maximum(acc, tap, out=acc)
                else:
                    acc += tap
        if is_max:
            return acc
        if not exclude_pad:
            return acc / np.float32(kh * kw)
        rows = _overlap(np.arange(outh) * sh, kh, y0, y1)
        cols = _overlap(np.arange(outw) * sw, kw, x0, x1)
        area = (rows[:, None] * cols[None, :]).astype(np.float32)
        # a window wholly outside the region gives 0/0 = nan, as in ncnn
        with np.errstate(invalid="ignore", divide="ignore"):
            return acc / area

    def _adaptive(self, x: np.ndarray, is_max: bool) -> np.ndarray:
        c, h, w = x.shape
        out_h = h if self.out_h == -233 else self.out_h
        out_w = w if self.out_w == -233 else self.out_w
        out = np.empty((c, out_h, out_w), dtype=np.float32)
        # window i covers [floor(i*h/out_h), ceil((i+1)*h/out_h)), as PyTorch's adaptive pooling
        for i in range(out_h):
            y0, y1 = i * h // out_h, -(-(i + 1) * h // out_h)
            for j in range(out_w):
                x0, x1 = j * w // out_w, -(-(j + 1) * w // out_w)
                win = x[:, y0:y1, x0:x1]
                if is_max:
                    out[:, i, j] = win.max(axis=(1, 2))
                else:
                    out[:, i, j] = win.sum(axis=(1, 2), dtype=np.float32) / np.float32((y1 - y0) * (x1 - x0))
        return out
