"""Permute: reorder the axes of a 2-D, 3-D or 4-D blob (param 0, order_type).

Each order type names, in ncnn's w-first order, which input dim becomes the output's w, h,
(d,) c: for 3-D, type 2 "w c h" gives out w = in w, out h = in c, out c = in h. 1-D blobs
pass through; each rank knows only its own order types (2, 6 or 24 of them).
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param

log = logging.getLogger("ncnn_c")

_ORDERS = {
    2: ("wh", "hw"),
    3: ("whc", "hwc", "wch", "cwh", "hcw", "chw"),
    4: (
        "whdc", "hwdc", "wdhc", "dwhc", "hdwc", "dhwc",
        "whcd", "hwcd", "wchd", "cwhd", "hcwd", "chwd",
        "wdch", "dwch", "wcdh", "cwdh", "dcwh", "cdwh",
        "hdcw", "dhcw", "hcdw", "chdw", "dchw", "cdhw",
    ),
}  # fmt: skip
_NUMPY_AXIS = {2: "hw", 3: "chw", 4: "cdhw"}


def _transpose_axes(dims: int, order: str) -> tuple[int, ...]:
    # the output's numpy axes are the order string read backwards (c first, w last)
    return tuple(_NUMPY_AXIS[dims].index(name) for name in reversed(order))


_AXES = {dims: [_transpose_axes(dims, o) for o in orders] for dims, orders in _ORDERS.items()}


class Permute(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    order_type: int

    PARAMS = (Param(0, "order_type", 0),)

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def transpose_axes(self, dims: int) -> tuple[int, ...] | None:
        """The numpy axes (``ndarray.transpose``) of the output of a ``dims``-D blob (2..4);
        None when ``order_type`` does not apply to that rank."""
        orders = _AXES.get(dims)
        if orders is None or self.order_type >= len(orders):
            return None
        return orders[self.order_type]

    def check_params(self) -> int:
        if not 0 <= self.order_type < 24:
            log.error("Permute %r: order_type %d is not in 0..23", self.name, self.order_type)
            return -1
        return 0

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        dims = bottom.dims
        if dims == 1 or self.order_type == 0:
            top.share_from(bottom)
            return 0
        if self.order_type >= len(_AXES[dims]):
            log.error(
                "Permute %r: order_type %d does not apply to a %d-D blob", self.name, self.order_type, dims
            )
            return -1
        x = bottom.tensor().transpose(_AXES[dims][self.order_type])
        top.create(*x.shape[::-1], elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        np.copyto(top.tensor(), x)
        return 0
