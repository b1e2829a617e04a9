"""Reshape: the same elements in a new shape of 1 to 4 dims (params w, h, d, c).

A param left at -233 drops that dim (and, as in ncnn, every dim after it in the order w, h,
c, d); 0 copies the input's size of that named dim; one -1 takes whatever is left. Also home
of ``share_reshaped``, the helper Flatten, Squeeze and ExpandDims use to relabel a blob.

``shape_expr`` (param 6, a string, see _expression.py) replaces the four params: its result
list is ``w``, ``w h``, ``w h c`` or ``w h d c``, computed per forward from the shapes of the
inputs (0 and -1 keep their meaning). An expression naming a second input makes the layer
take all its bottoms. A malformed expression, or one giving more than 4 sizes, is refused at
load time; one that cannot be evaluated on the actual inputs (an int division by zero, a
missing input) fails the forward, as in the PyPI ncnn build.
"""

from __future__ import annotations

import logging

from ..mat import Mat
from . import Layer, Param
from ._expression import ExpressionError, ShapeExpression

log = logging.getLogger("ncnn_c")

UNSET = -233


def share_reshaped(layer: Layer, bottom: Mat, top: Mat, shape: tuple[int, ...], opt) -> int:
    """Make ``top`` hold ``bottom``'s elements in numpy ``shape``.

    Mat.reshape shares the storage when neither side has channel padding, else copies once.
    """
    new = bottom.reshape(*shape[::-1], allocator=opt.blob_allocator)
    if new.dims == 0:
        log.error("%s %r: cannot reshape %s to %s", layer.type, layer.name, bottom.tensor().shape, shape)
        return -1
    if new.empty():
        return -100
    top.share_from(new)
    return 0


def numpy_shape(m: Mat) -> tuple[int, ...]:
    """The numpy shape (c, d, h, w) of a Mat, with as many axes as it has dims."""
    return ((m.w,), (m.h, m.w), (m.c, m.h, m.w), (m.c, m.d, m.h, m.w))[m.dims - 1]


class Reshape(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    w: int
    h: int
    d: int
    c: int
    permute: int

    PARAMS = (
        Param(0, "w", UNSET),
        Param(1, "h", UNSET),
        Param(11, "d", UNSET),
        Param(2, "c", UNSET),
        # ncnn dropped the permute flag in 2025 (its Reshape ignores param 3 since)
        Param(3, "permute", 0),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self.shape_expr = ""
        self._shape_expr: ShapeExpression | None = None

    def load_param(self, pd) -> int:
        # shape_expr (id 6) is a string param, which the Param table does not carry
        self.shape_expr = str(pd.get(6, ""))
        return super().load_param(pd)

    def _check_shape_expr(self) -> int:
        self.one_blob_only = True
        self._shape_expr = None
        if not self.shape_expr:
            return 0
        try:
            expr = ShapeExpression(self.shape_expr)
        except ExpressionError as e:
            log.error("Reshape %r: shape_expr: %s", self.name, e)
            return -1
        if expr.n_results > 4:
            log.error(
                "Reshape %r: shape_expr %r gives %d sizes, at most 4",
                self.name,
                self.shape_expr,
                expr.n_results,
            )
            return -1
        self._shape_expr = expr
        self.one_blob_only = expr.blob_count <= 1
        return 0

    def out_rank(self) -> int:
        """How many dims the output has: the first unset param in w, h, c, d order cuts it."""
        if self.w == UNSET:
            return 0
        if self.h == UNSET:
            return 1
        if self.c == UNSET:
            return 2
        if self.d == UNSET:
            return 3
        return 4

    def check_params(self) -> int:
        if self._check_shape_expr() != 0:
            return -1
        if self._shape_expr is not None:
            if self.permute:
                log.warning("Reshape %r: permute=1 is ignored, as in current ncnn", self.name)
            return 0
        rank = self.out_rank()
        if rank == 0:
            log.error("Reshape %r: w (param 0) is unset, no output shape", self.name)
            return -1
        sizes = (self.w, self.h, self.c, self.d)[:rank]
        if any(s < -1 for s in sizes) or sum(s == -1 for s in sizes) > 1:
            log.error(
                "Reshape %r: bad sizes w h c d = %s (at most one -1, no other negative)", self.name, sizes
            )
            return -1
        if self.permute:
            log.warning("Reshape %r: permute=1 is ignored, as in current ncnn", self.name)
        return 0

    def _expr_sizes(self, bottoms: list[Mat]) -> dict[str, int] | None:
        """The sizes shape_expr gives for these inputs, by name; None (logged) on failure."""
        assert self._shape_expr is not None
        try:
            vals = self._shape_expr.evaluate(bottoms)
        except ExpressionError as e:
            log.error("Reshape %r: shape_expr: %s", self.name, e)
            return None
        names = ("w", "h", "d", "c") if len(vals) == 4 else ("w", "h", "c")[: len(vals)]
        return dict(zip(names, vals, strict=True))

    def forward(self, bottom, top, opt) -> int:
        if isinstance(bottom, list):
            if not bottom or len(top) != 1:
                log.error(
                    "Reshape %r: needs inputs and one output, got %d / %d", self.name, len(bottom), len(top)
                )
                return -1
            bottoms, bottom, top = bottom, bottom[0], top[0]
        else:
            bottoms = [bottom]
        shape = self.out_shape(bottom, bottoms)
        if shape is None:
            return -1
        return share_reshaped(self, bottom, top, shape, opt)

    def out_shape(self, bottom, bottoms) -> tuple[int, ...] | None:
        """The numpy shape of the output for ``bottom`` (anything with dims, w, h, d, c; the
        shape expression also sees ``bottoms``); None (logged) when it cannot be made."""
        if self._shape_expr is not None:
            params = self._expr_sizes(bottoms)
            if params is None:
                return None
        else:
            names = ("w", "h", "d", "c") if self.out_rank() == 4 else ("w", "h", "c")[: self.out_rank()]
            params = {n: getattr(self, n) for n in names}
        rank = len(params)
        names = ("w", "h", "d", "c") if rank == 4 else ("w", "h", "c")[:rank]
        total = bottom.w * bottom.h * bottom.d * bottom.c
        # 0 means "the input's size of this named dim"
        given = {"w": bottom.w, "h": bottom.h, "d": bottom.d, "c": bottom.c}
        sizes = {n: given[n] if params[n] == 0 else params[n] for n in names}
        known = 1
        for s in sizes.values():
            if s != -1:
                known *= s
        for n, s in sizes.items():
            if s == -1:
                sizes[n] = total // known if known > 0 else 0
        shape = tuple(sizes[n] for n in reversed(names))
        if any(s <= 0 for s in shape) or known <= 0:
            log.error("Reshape %r: cannot reshape %s to %s", self.name, numpy_shape(bottom), shape)
            return None
        return shape
