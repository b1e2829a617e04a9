"""Crop: cut a box out of a blob, in one of three ways (chosen as ncnn does at load time).

* offsets + sizes: ``woffset``.. give the corner, ``outw``.. the size (-233: up to the end),
  ``woffset2``.. how much to leave at the far side; the smaller of the two limits wins.
* numpy-style ``starts``/``ends``/``axes`` arrays: negative values count from the end,
  -233 means the start / end of the axis, an ``end`` of 0 means the end, and ends past the
  axis are clamped to it.
* with a second input: the box has the reference blob's size (its w, h, d and, at the same
  rank, c) at the param offsets; or, when ``woffset`` is -233, the reference blob holds the
  offsets and sizes as int32 values (woffset hoffset [doffset] coffset outw outh [outd] outc).

The numpy-style lists may also be string expressions over the input shapes (see
_expression.py): ``starts_expr`` / ``ends_expr`` / ``axes_expr`` (params 19-21), evaluated per
forward; they take over when both starts_expr and ends_expr are set. An empty axes_expr means
every axis in order (ncnn reads an empty stack there). An expression naming a second input
makes the layer take all its bottoms.

A box that leaves the blob, or is empty, is an error (ncnn reads out of bounds there).
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param
from ._expression import ExpressionError, ShapeExpression
from ._int8 import int8_or_fp32
from .reshape import numpy_shape

log = logging.getLogger("ncnn_c")

UNSET = -233


class Crop(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    woffset: int
    hoffset: int
    doffset: int
    coffset: int
    outw: int
    outh: int
    outd: int
    outc: int
    woffset2: int
    hoffset2: int
    doffset2: int
    coffset2: int
    starts: np.ndarray
    ends: np.ndarray
    axes: np.ndarray

    PARAMS = (
        Param(0, "woffset", 0),
        Param(1, "hoffset", 0),
        Param(13, "doffset", 0),
        Param(2, "coffset", 0),
        Param(3, "outw", 0),
        Param(4, "outh", 0),
        Param(14, "outd", 0),
        Param(5, "outc", 0),
        Param(6, "woffset2", 0),
        Param(7, "hoffset2", 0),
        Param(15, "doffset2", 0),
        Param(8, "coffset2", 0),
        Param(9, "starts", kind="ints"),
        Param(10, "ends", kind="ints"),
        Param(11, "axes", kind="ints"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self.starts_expr = ""
        self.ends_expr = ""
        self.axes_expr = ""
        # compiled starts / ends / axes expressions, set when both starts_expr and ends_expr are
        self._exprs: tuple[ShapeExpression, ShapeExpression, ShapeExpression | None] | None = None

    def load_param(self, pd) -> int:
        # the expression params (ids 19-21) are strings, which the Param table does not carry
        self.starts_expr = str(pd.get(19, ""))
        self.ends_expr = str(pd.get(20, ""))
        self.axes_expr = str(pd.get(21, ""))
        return super().load_param(pd)

    def numpy_style(self) -> bool:
        return bool(self.starts.size and self.ends.size) or self._exprs is not None

    def param_box(self, shape: tuple[int, ...]) -> list[tuple[int, int]] | None:
        """(offset, size) per numpy axis of an input of ``shape`` when the params alone
        decide it; None when a reference blob or an expression does (or on a bad param)."""
        if not self.one_blob_only or self._exprs is not None:
            return None
        return self._box_from_arrays(shape) if self.numpy_style() else self._box_from_params(shape)

    def _check_exprs(self) -> int | None:
        """Compile the expression params; the most inputs they name (None, logged, on error)."""
        self._exprs = None
        compiled: dict[str, ShapeExpression] = {}
        for key in ("starts_expr", "ends_expr", "axes_expr"):
            text = getattr(self, key)
            if not text:
                continue
            try:
                compiled[key] = ShapeExpression(text)
            except ExpressionError as e:
                log.error("Crop %r: %s: %s", self.name, key, e)
                return None
        if "starts_expr" in compiled and "ends_expr" in compiled:
            axes = compiled.get("axes_expr")
            if axes is not None and axes.n_results > 4:
                log.error("Crop %r: axes_expr gives %d axes, at most 4", self.name, axes.n_results)
                return None
            self._exprs = (compiled["starts_expr"], compiled["ends_expr"], axes)
        return max((e.blob_count for e in compiled.values()), default=0)

    def check_params(self) -> int:
        refs = self._check_exprs()
        if refs is None:
            return -1
        sizes = (self.outw, self.outh, self.outd, self.outc)
        far = (self.woffset2, self.hoffset2, self.doffset2, self.coffset2)
        # nothing says how big the box is: it comes from a reference blob
        self.one_blob_only = (any(sizes) or any(far) or self.numpy_style()) and refs <= 1
        if self.axes.size > 4:
            log.error("Crop %r: %d axes, at most 4", self.name, self.axes.size)
            return -1
        return 0

    def _eval_exprs(self, bottoms: list[Mat]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """starts, ends, axes from the expressions for these inputs (None, logged, on error)."""
        assert self._exprs is not None
        out = []
        for key, expr in zip(("starts_expr", "ends_expr", "axes_expr"), self._exprs, strict=True):
            try:
                vals = expr.evaluate(bottoms) if expr is not None else []
            except ExpressionError as e:
                log.error("Crop %r: %s: %s", self.name, key, e)
                return None
            out.append(np.asarray(vals, dtype=np.int32))
        return out[0], out[1], out[2]

    # -- the box: per numpy axis (c, d, h, w of the input's rank), (offset, size) ---------------
    def _box_from_arrays(
        self, shape: tuple[int, ...], lists: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    ) -> list[tuple[int, int]] | None:
        starts, ends, axes_arr = lists if lists is not None else (self.starts, self.ends, self.axes)
        dims = len(shape)
        box = [(0, s) for s in shape]
        axes = axes_arr.tolist() if axes_arr.size else list(range(dims))
        if starts.size < len(axes) or ends.size < len(axes):
            log.error(
                "Crop %r: %d starts / %d ends for %d axes",
                self.name,
                starts.size,
                ends.size,
                len(axes),
            )
            return None
        for i, a in enumerate(axes):
            axis = a + dims if a < 0 else a
            if not 0 <= axis < dims:
                log.error("Crop %r: axis %d out of range for a %d-D blob", self.name, a, dims)
                return None
            n = shape[axis]
            start, end = int(starts[i]), int(ends[i])
            start = 0 if start == UNSET else start
            end = n if end == UNSET else end
            off = start if start >= 0 else n + start
            box[axis] = (off, min(n, end if end > 0 else n + end) - off)
        return box

    def _box_from_params(self, shape: tuple[int, ...]) -> list[tuple[int, int]]:
        rev = shape[::-1]  # w, h, (d,) c
        names = ("w", "h", "c") if len(shape) == 3 else ("w", "h", "d", "c")[: len(shape)]
        box = []
        for n, name in zip(rev, names, strict=False):
            off = getattr(self, name + "offset")
            size = n - off - getattr(self, name + "offset2")
            out = getattr(self, "out" + name)
            if out != UNSET:
                size = min(out, size)
            box.append((off, size))
        return box[::-1]

    def _box_from_reference(self, shape: tuple[int, ...], ref: Mat) -> list[tuple[int, int]] | None:
        dims = len(shape)
        if self.woffset == UNSET:
            need = (4, 5, 6, 8)[dims - 1]
            raw = np.ascontiguousarray(ref.tensor(), dtype=np.float32).reshape(-1)
            if raw.size < need:
                log.error("Crop %r: the roi blob holds %d values, %d needed", self.name, raw.size, need)
                return None
            v = raw[:need].view(np.int32).tolist()
            # w h [d] c order: offsets first, then sizes (1-D: woffset .. outw at index 3)
            half = {
                1: ((0,), (3,)),
                2: ((0, 1), (3, 4)),
                3: ((0, 1, 2), (3, 4, 5)),
                4: ((0, 1, 2, 3), (4, 5, 6, 7)),
            }
            offs, sizes = half[dims]
            return [(v[o], v[s]) for o, s in zip(offs, sizes, strict=True)][::-1]
        rshape = {"w": ref.w, "h": ref.h, "d": ref.d, "c": ref.c}
        names = ("w", "h", "c") if dims == 3 else ("w", "h", "d", "c")[:dims]
        box = []
        for n, name in zip(shape[::-1], names, strict=False):
            size = rshape[name]
            if name == "c" and ref.dims != dims:
                size = n  # a reference of another rank keeps every channel
            box.append((getattr(self, name + "offset"), size))
        return box[::-1]

    def forward(self, bottom, top, opt) -> int:
        if isinstance(bottom, list):
            if not bottom or (len(bottom) < 2 and not self.one_blob_only and self._exprs is None):
                log.error("Crop %r: needs a reference blob as second input", self.name)
                return -1
            src, tops = bottom[0], top
            out = tops[0]
            bottoms = bottom
        else:
            src, out = bottom, top
            bottoms = [bottom]
        shape = numpy_shape(src)
        if self._exprs is not None:
            lists = self._eval_exprs(bottoms)
            if lists is None:
                return -1
            box = self._box_from_arrays(shape, lists)
        elif self.numpy_style():
            box = self._box_from_arrays(shape)
        elif self.one_blob_only:
            box = self._box_from_params(shape)
        else:
            box = self._box_from_reference(shape, bottom[1])
        if box is None:
            return -1
        if any(off < 0 or size <= 0 or off + size > n for (off, size), n in zip(box, shape, strict=True)):
            log.error("Crop %r: box %s (offset, size per axis) does not fit in %s", self.name, box, shape)
            return -1
        if all(size == n for (_, size), n in zip(box, shape, strict=True)):
            out.share_from(src)
            return 0
        part = src.tensor()[tuple(slice(off, off + size) for off, size in box)]
        # an int8 blob (a Quantize / Requantize top) is cropped as int8, as ncnn's
        out.create(*part.shape[::-1], elemsize=int8_or_fp32(src), elempack=1, allocator=opt.blob_allocator)
        if out.empty():
            return -100
        np.copyto(out.tensor(), part)
        return 0
