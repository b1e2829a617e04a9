"""GridSample: sample a 3-D (or 4-D) blob at the normalized locations of a grid blob
(PyTorch's grid_sample), fp32.

sample_type 1 bilinear (trilinear on 4-D), 2 nearest, 3 bicubic (3-D only, A = -0.75);
padding_mode 1 zeros, 2 border, 3 reflection; align_corner as PyTorch's align_corners. The
grid holds (x, y[, z]) innermost — numpy (outh, outw, 2) / (outd, outh, outw, 3) — or, with
permute_fusion 1, one plane per coordinate: (2, outh, outw) / (3, outd, outh, outw).
Coordinates are computed in fp32 as ncnn does; taps outside the input read 0. A NaN (or inf)
grid value follows ncnn's vector code, which takes every grid of 16 points or more: border
and unaligned reflection padding clamp it to the first (or last) pixel, aligned reflection
leaves it NaN (ncnn's scalar tail, for the last points, differs there).
"""

from __future__ import annotations

import itertools
import logging
from typing import ClassVar

import numpy as np

from . import Layer, Param
from ._window_nd import create_top

log = logging.getLogger("ncnn_c")

F32 = np.float32


def _unnormalize(g: np.ndarray, n: int, align: bool) -> np.ndarray:
    if align:
        return (g + F32(1)) / F32(2) * F32(n - 1)
    return ((g + F32(1)) * F32(n) - F32(1)) / F32(2)


def _reflect(x: np.ndarray, high: float) -> np.ndarray:
    x = np.abs(x)
    return F32(high) - np.abs(x - F32(high))


def _clamp(s: np.ndarray, n: int) -> np.ndarray:
    """ncnn's min_ps(n - 1, max_ps(s, 0)): max_ps takes its second operand for a NaN, so a NaN
    coordinate (and -inf) lands on 0, +inf on n - 1 (np.clip would keep the NaN)."""
    return np.minimum(np.fmax(s, F32(0)), F32(n - 1))


def _pad_coord(s: np.ndarray, n: int, padding_mode: int, align: bool) -> np.ndarray:
    """ncnn's compute_coord: border clamps, reflection mirrors once at each end (then clamps,
    except with align_corner, where ncnn's vector code does not)."""
    if padding_mode == 2:
        return _clamp(s, n)
    if padding_mode == 3:
        if align:
            return _reflect(s, n - 1)
        return _clamp(_reflect(s + F32(0.5), n) - F32(0.5), n)
    return s


def _gather(x: np.ndarray, idx: list[np.ndarray]) -> np.ndarray:
    """x (c, *spatial) at integer coordinates ``idx`` (outermost axis first), 0 outside."""
    inside = np.ones(idx[0].shape, bool)
    flat = np.zeros(idx[0].shape, np.int64)
    for i, n in zip(idx, x.shape[1:], strict=True):
        inside &= (i >= 0) & (i < n)
        flat = flat * n + np.clip(i, 0, n - 1)
    return x.reshape(x.shape[0], -1)[:, flat] * inside


def _cubic_coeffs(t: np.ndarray) -> list[np.ndarray]:
    a = F32(-0.75)

    def near(v):
        return ((a + F32(2)) * v - (a + F32(3))) * v * v + F32(1)

    def far(v):
        return ((a * v - F32(5) * a) * v + F32(8) * a) * v - F32(4) * a

    return [far(t + F32(1)), near(t), near(F32(1) - t), far(F32(1) - t + F32(1))]


class GridSample(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "sample_type", 1),
        Param(1, "padding_mode", 1),
        Param(2, "align_corner", 0),
        Param(3, "permute_fusion", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def check_params(self) -> int:
        for key, value in (("sample_type", self.sample_type), ("padding_mode", self.padding_mode)):
            if value not in (1, 2, 3):
                log.error("GridSample %r: %s %d is not 1, 2 or 3", self.name, key, value)
                return -1
        if self.permute_fusion not in (0, 1):
            log.error("GridSample %r: permute_fusion %d is not 0 or 1", self.name, self.permute_fusion)
            return -1
        return 0

    def forward(self, bottoms, tops, opt) -> int:
        if len(bottoms) != 2:
            log.error("GridSample %r: needs the input and the grid, got %d blobs", self.name, len(bottoms))
            return -1
        src, grid = bottoms
        if src.dims not in (3, 4) or src.elempack != 1 or grid.dims != src.dims or grid.elempack != 1:
            log.error(
                "GridSample %r: needs a 3-D or 4-D fp32 input and a grid of the same dims, got dims %d and %d",
                self.name,
                src.dims,
                grid.dims,
            )
            return -1
        x = np.asarray(src.tensor(), dtype=np.float32)
        g = np.asarray(grid.tensor(), dtype=np.float32)
        naxes = x.ndim - 1
        if self.permute_fusion == 0:
            g = np.moveaxis(g, -1, 0)
        if g.shape[0] != naxes:
            log.error(
                "GridSample %r: the grid holds %d coordinates per point, needs %d",
                self.name,
                g.shape[0],
                naxes,
            )
            return -1
        if naxes == 3 and self.sample_type == 3:
            log.error("GridSample %r: sample_type 3 (bicubic) needs a 3-D input", self.name)
            return -1
        align = bool(self.align_corner)
        # grid coordinates run x, y(, z): innermost axis first, the reverse of numpy's
        sizes = x.shape[:0:-1]
        with np.errstate(invalid="ignore"):  # a NaN or inf grid value is data (module docstring)
            y = self._sample(x, g, sizes, align)
        dst = create_top(tops[0], (x.shape[0], *g.shape[1:]), opt)
        if dst is None:
            return -100
        dst[...] = y.reshape(dst.shape)
        return 0

    def _sample(self, x: np.ndarray, g: np.ndarray, sizes, align: bool) -> np.ndarray:
        if self.sample_type == 3:
            y = self._bicubic(x, [_unnormalize(c, n, align) for c, n in zip(g, sizes, strict=True)])
        else:
            coords = [
                _pad_coord(_unnormalize(c, n, align), n, self.padding_mode, align)
                for c, n in zip(g, sizes, strict=True)
            ]
            coords = coords[::-1]
            if self.sample_type == 2:
                y = _gather(x, [np.round(c).astype(np.int64) for c in coords])
            else:
                y = self._linear(x, coords)
        return y

    @staticmethod
    def _linear(x: np.ndarray, coords: list[np.ndarray]) -> np.ndarray:
        base = [np.floor(c) for c in coords]
        frac = [c - b for c, b in zip(coords, base, strict=True)]
        lo = [b.astype(np.int64) for b in base]
        acc = np.zeros((x.shape[0], *coords[0].shape), np.float32)
        for corner in itertools.product((0, 1), repeat=len(coords)):
            weight = np.ones(coords[0].shape, np.float32)
            for bit, f in zip(corner, frac, strict=True):
                weight = weight * (f if bit else F32(1) - f)
            acc += _gather(x, [i + bit for i, bit in zip(lo, corner, strict=True)]) * weight
        return acc

    def _bicubic(self, x: np.ndarray, coords: list[np.ndarray]) -> np.ndarray:
        ix, iy = coords
        x0, y0 = np.floor(ix), np.floor(iy)
        cx, cy = _cubic_coeffs(ix - x0), _cubic_coeffs(iy - y0)
        h, w = x.shape[1:]
        align = bool(self.align_corner)
        acc = np.zeros((x.shape[0], *ix.shape), np.float32)
        for i in range(4):
            yy = _pad_coord(y0 + F32(i - 1), h, self.padding_mode, align).astype(np.int64)
            row = np.zeros_like(acc)
            for j in range(4):
                xx = _pad_coord(x0 + F32(j - 1), w, self.padding_mode, align).astype(np.int64)
                row += _gather(x, [yy, xx]) * cx[j]
            acc += row * cy[i]
        return acc
