"""Interp: resize a blob's width/height by nearest (1), bilinear (2) or bicubic (3) interpolation.

The output size is ``output_width`` x ``output_height`` when both are set, else the input size
times ``width_scale`` / ``height_scale`` (truncated); with ``dynamic_target_size`` it is the
second input's ``w`` x ``h`` instead. Per dims, as ncnn does it: a 1-D blob of ``w`` values
becomes ``w`` channels, each an output-sized plane filled with its value (the size then comes
from a 1 x 1 input); a 2-D blob keeps its rows and resizes ``w`` only; a 3-D blob resizes each
channel. An unchanged size passes the blob through.

Source coordinates follow the PyPI ncnn build exactly, since they decide which pixels are
read. Per axis, the source step is ``in / out`` when that axis's output size param is set or
the size comes from a reference blob, and ``1 / scale`` otherwise (they differ whenever the
scaled size was truncated; ncnn's older sources used ``in / out`` for the interpolating modes):

* nearest: ``min(int(x * step), w - 1)`` in float32;
* bilinear/bicubic: ``fx = float((x + 0.5) * step - 0.5)`` computed in double, or
  ``x * (w - 1) / (outw - 1)`` with align_corner; ``sx = floor(fx)``, the remainder gives the
  weights (bicubic: Keys' kernel with A = -0.75), and windows running off an edge are folded
  back onto the edge pixels by moving their weights, in ncnn's order of checks.

``size_expr`` (param 9, a string, see _expression.py) computes the output size from the
input shapes at run time: ``outw`` or ``outw,outh`` (one value keeps the input's ``h``); it
overrides both the params and a reference blob, and its sizes step like reference-blob sizes
(``in / out``). An expression naming a second input makes the layer take all its bottoms.

The taps and weights are tables built once per forward; rows are interpolated horizontally
first, then vertically, as ncnn does, so the float32 sums associate the same way.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param
from ._expression import ExpressionError, ShapeExpression

log = logging.getLogger("ncnn_c")

_INT_MIN = -(2**31)


def _source_positions(
    n: int, out: int, align_corner: int, step: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """(sx, fx): integer source cell and float32 remainder of every output position.

    ``step`` is the source distance between output cells when a scale param gives it;
    otherwise ``n / out``.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        if align_corner:
            # one output cell: the scale is infinite, and ncnn's build then reads position 0
            scale = np.float64(n - 1) / np.float64(out - 1) if out > 1 else 0.0
            pos = np.arange(out, dtype=np.float64) * scale
        else:
            scale = np.float64(n) / np.float64(out) if step is None else np.float64(step)
            pos = (np.arange(out, dtype=np.float64) + 0.5) * scale - 0.5
        fx = pos.astype(np.float32)
        fl = np.floor(fx)
        # C's float->int conversion of nan/inf/huge gives INT_MIN on x86
        ok = np.isfinite(fl) & (np.abs(fl) < 2.0**31)
        sx = np.where(ok, fl, _INT_MIN).astype(np.int64)
        fx = fx - sx.astype(np.float32)
    return sx, fx


def linear_coeffs(
    n: int, out: int, align_corner: int, step: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Left source index (out,) and the two weights (out, 2) of bilinear resizing."""
    sx, fx = _source_positions(n, out, align_corner, step)
    low = sx < 0
    sx[low] = 0
    fx[low] = 0.0
    high = sx >= n - 1
    sx[high] = n - 2
    fx[high] = 1.0
    alpha = np.stack([np.float32(1.0) - fx, fx], axis=1).astype(np.float32)
    return sx, alpha


def cubic_coeffs(
    n: int, out: int, align_corner: int, step: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Source index of tap 1 (out,) and the four weights (out, 4) of bicubic resizing."""
    sx, fx = _source_positions(n, out, align_corner, step)
    a = np.float32(-0.75)
    f0 = fx + np.float32(1.0)
    f1 = fx
    f2 = np.float32(1.0) - fx
    with np.errstate(invalid="ignore", over="ignore"):
        c0 = a * f0 * f0 * f0 - np.float32(5) * a * f0 * f0 + np.float32(8) * a * f0 - np.float32(4) * a
        c1 = (a + np.float32(2)) * f1 * f1 * f1 - (a + np.float32(3)) * f1 * f1 + np.float32(1)
        c2 = (a + np.float32(2)) * f2 * f2 * f2 - (a + np.float32(3)) * f2 * f2 + np.float32(1)
        c3 = np.float32(1) - c0 - c1 - c2
    k = np.stack([c0, c1, c2, c3], axis=1).astype(np.float32)
    # folds at the edges, each seeing the index the previous one left (order matters for n <= 4)
    m = sx <= -1
    sx[m] = 1
    k[m] = np.stack(
        [np.float32(1) - k[m, 3], k[m, 3], np.zeros_like(k[m, 0]), np.zeros_like(k[m, 0])], axis=1
    )
    m = sx == 0
    sx[m] = 1
    k[m] = np.stack([k[m, 0] + k[m, 1], k[m, 2], k[m, 3], np.zeros_like(k[m, 0])], axis=1)
    m = sx == n - 2
    sx[m] = n - 3
    k[m] = np.stack([np.zeros_like(k[m, 0]), k[m, 0], k[m, 1], k[m, 2] + k[m, 3]], axis=1)
    m = sx >= n - 1
    sx[m] = n - 3
    k[m] = np.stack(
        [np.zeros_like(k[m, 0]), np.zeros_like(k[m, 0]), k[m, 0], np.float32(1) - k[m, 0]], axis=1
    )
    return sx, k


def _taps(sx: np.ndarray, weights: np.ndarray, first: int, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(source index, weight) per tap; tap t reads ``sx + first + t``, clamped into the row.

    Clamping only touches taps whose weight ncnn zeroes (it reads past the row there).
    """
    return [(np.clip(sx + first + t, 0, n - 1), weights[:, t].copy()) for t in range(weights.shape[1])]


def _resize_axis(x: np.ndarray, axis: int, taps) -> np.ndarray:
    """Weighted sum of gathered slices along ``axis``, accumulated tap by tap in float32."""
    shape = [1] * x.ndim
    shape[axis] = -1
    acc = None
    for idx, wt in taps:
        term = np.take(x, idx, axis=axis)
        term *= wt.reshape(shape)
        if acc is None:
            acc = term
        else:
            acc += term
    assert acc is not None
    return acc


class Interp(Layer):
    # set by load_param from PARAMS; declared for the type checker
    resize_type: int
    height_scale: float
    width_scale: float
    output_height: int
    output_width: int
    dynamic_target_size: int
    align_corner: int

    PARAMS = (
        Param(0, "resize_type", 0),
        Param(1, "height_scale", 1.0),
        Param(2, "width_scale", 1.0),
        Param(3, "output_height", 0),
        Param(4, "output_width", 0),
        Param(5, "dynamic_target_size", 0),
        Param(6, "align_corner", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self.size_expr = ""
        self._size_expr: ShapeExpression | None = None

    def load_param(self, pd) -> int:
        # size_expr (id 9) is a string param, which the Param table does not carry
        self.size_expr = str(pd.get(9, ""))
        return super().load_param(pd)

    def check_params(self) -> int:
        if self.resize_type not in (0, 1, 2, 3):
            log.error("Interp %r: unknown resize_type %d", self.name, self.resize_type)
            return -1
        self._size_expr = None
        if self.size_expr:
            try:
                self._size_expr = ShapeExpression(self.size_expr)
            except ExpressionError as e:
                log.error("Interp %r: size_expr: %s", self.name, e)
                return -1
            if self._size_expr.n_results > 2:
                log.error(
                    "Interp %r: size_expr %r gives %d sizes, at most 2 (w, h)",
                    self.name,
                    self.size_expr,
                    self._size_expr.n_results,
                )
                return -1
        # the second input gives the output size (or is named by the size expression)
        refs = self._size_expr.blob_count if self._size_expr is not None else 0
        self.one_blob_only = not self.dynamic_target_size and refs <= 1
        return 0

    def sized_by_params(self) -> bool:
        """Whether the output size comes from the params and the input's size alone, not
        from a reference blob or a size expression."""
        return self.one_blob_only and self._size_expr is None

    def _expr_size(self, bottoms: list[Mat]) -> tuple[int, int] | None:
        """(outw, outh) from size_expr; one value keeps the input's h. None (logged) on failure."""
        assert self._size_expr is not None
        try:
            vals = self._size_expr.evaluate(bottoms)
        except ExpressionError as e:
            log.error("Interp %r: size_expr: %s", self.name, e)
            return None
        return (vals[0], bottoms[0].h) if len(vals) == 1 else (vals[0], vals[1])

    def forward(self, bottom, top, opt) -> int:
        if self._size_expr is not None:
            bottoms = bottom if isinstance(bottom, list) else [bottom]
            out = top[0] if isinstance(top, list) else top
            if not bottoms or (isinstance(top, list) and len(top) != 1):
                log.error("Interp %r: needs inputs and one output", self.name)
                return -1
            size = self._expr_size(bottoms)
            if size is None:
                return -1
            return self._resize(bottoms[0], out, size[0], size[1], opt, True)
        if isinstance(bottom, list):
            if len(bottom) != 2 or len(top) != 1:
                log.error(
                    "Interp %r: needs an input and a reference blob, got %d inputs", self.name, len(bottom)
                )
                return -1
            ref = bottom[1]
            return self._resize(bottom[0], top[0], ref.w, ref.h, opt, True)
        w, h = (1, 1) if bottom.dims == 1 else (bottom.w, bottom.h)
        outw, outh = self.output_width, self.output_height
        if outw == 0 or outh == 0:
            outw = int(np.float32(w) * np.float32(self.width_scale))
            outh = int(np.float32(h) * np.float32(self.height_scale))
        return self._resize(bottom, top, outw, outh, opt, False)

    def _steps(self, dynamic: bool) -> tuple[float | None, float | None]:
        """Source step (y, x) from the scale params, None where the sizes decide it.

        An axis whose output size param is set, or any axis of the reference-blob form, steps
        by ``in / out``; otherwise by ``1 / scale``, which differs from ``in / out`` whenever
        the scaled size was truncated.
        """
        one = np.float32(1.0)
        with np.errstate(divide="ignore"):
            sy = None if dynamic or self.output_height else float(one / np.float32(self.height_scale))
            sx = None if dynamic or self.output_width else float(one / np.float32(self.width_scale))
        return sy, sx

    def _resize(self, bottom: Mat, top: Mat, outw: int, outh: int, opt, dynamic: bool) -> int:
        dims = bottom.dims
        if dims not in (1, 2, 3) or bottom.elempack != 1:
            log.error(
                "Interp %r: needs a 1-D..3-D fp32 blob, got dims %d elempack %d",
                self.name,
                dims,
                bottom.elempack,
            )
            return -1
        if outw <= 0 or (dims != 2 and outh <= 0):
            log.error("Interp %r: output size %dx%d is empty", self.name, outw, outh)
            return -1
        x = bottom.tensor()
        if dims == 1:
            # every value becomes a constant output plane
            top.create(outw, outh, bottom.w, elemsize=4, elempack=1, allocator=opt.blob_allocator)
            if top.empty():
                return -100
            top.tensor()[...] = x[:, None, None]
            return 0
        if dims == 2:
            x = x[None]
            outh = bottom.h
        c, h, w = x.shape
        if outw == w and outh == h:
            top.share_from(bottom)
            return 0
        if self.resize_type == 0:
            log.error("Interp %r: resize_type 0 cannot resize %dx%d to %dx%d", self.name, w, h, outw, outh)
            return -1
        if dims == 2:
            top.create(outw, outh, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        else:
            top.create(outw, outh, c, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        dst = top.tensor().reshape(c, outh, outw)
        step_y, step_x = self._steps(dynamic)
        if self.resize_type == 1:
            self._nearest(x, dst, dims == 3, step_y, step_x)
            return 0
        coeffs, first = (linear_coeffs, 0) if self.resize_type == 2 else (cubic_coeffs, -1)
        xtaps = _taps(*coeffs(w, outw, self.align_corner, step_x), first, w)
        if dims == 2:
            dst[...] = _resize_axis(x, 2, xtaps)
            return 0
        ytaps = _taps(*coeffs(h, outh, self.align_corner, step_y), first, h)
        if outh < h:
            # shrinking: interpolate only the source rows that are read
            # the taps' rows, sorted, once each (not np.unique: its first call imports numpy.ma,
            # 0.4-0.7 MB of peak RSS on a small network)
            rows = np.flatnonzero(np.bincount(np.concatenate([idx for idx, _ in ytaps]), minlength=h))
            remap = np.searchsorted(rows, [idx for idx, _ in ytaps])
            hz = _resize_axis(x[:, rows], 2, xtaps)
            ytaps = [(r, wt) for r, (_, wt) in zip(remap, ytaps, strict=True)]
        else:
            hz = _resize_axis(x, 2, xtaps)
        dst[...] = _resize_axis(hz, 1, ytaps)
        return 0

    def _nearest(self, x: np.ndarray, dst: np.ndarray, resize_h: bool, step_y, step_x) -> None:
        c, h, w = x.shape
        outh, outw = dst.shape[1:]
        ix = nearest_index(w, outw, step_x)
        if not resize_h:
            dst[...] = x[:, :, ix]
            return
        iy = nearest_index(h, outh, step_y)
        dst[...] = x[:, iy[:, None], ix[None, :]]


def nearest_index(n: int, out: int, step: float | None) -> np.ndarray:
    """Source index of every output position of nearest resizing along an axis of ``n``."""
    s = np.float32(n) / np.float32(out) if step is None else np.float32(step)
    return np.minimum((np.arange(out, dtype=np.float32) * s).astype(np.int64), n - 1)
