"""MatMul (fp32): ``A @ B`` (``B^T`` with ``transB``) over 1-D to 4-D blobs, as torch.matmul.

ncnn's rules are numpy's: a 1-D A is one row and a 1-D B one column (that axis then leaves the
result, and two 1-D blobs give a 1-element blob); the last two axes multiply, the ones in front
are batch axes where a size 1 or a missing axis broadcasts. ``transB`` swaps B's last two axes
(a 1-D B has none to swap).
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from . import Layer, Param
from ._blob import store_array

log = logging.getLogger("ncnn_c")


class MatMul(Layer):
    PARAMS: ClassVar[tuple[Param, ...]] = (Param(0, "transB", 0),)
    transB: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False

    def forward(self, bottoms, tops, opt) -> int:
        if len(bottoms) != 2 or not tops:
            log.error(
                "MatMul %r: needs inputs A and B and one output, got %d inputs", self.name, len(bottoms)
            )
            return -1
        A, B = bottoms
        for what, m in (("A", A), ("B", B)):
            if m.dims not in (1, 2, 3, 4) or m.elempack != 1:
                log.error(
                    "MatMul %r: %s must be a 1-D to 4-D fp32 blob, got dims %d elempack %d",
                    self.name,
                    what,
                    m.dims,
                    m.elempack,
                )
                return -1
        a = A.tensor()
        b = B.tensor()
        if self.transB and b.ndim >= 2:
            b = np.swapaxes(b, -1, -2)
        k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
        batch_ok = True
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            batch_ok = False
        if a.shape[-1] != k_b or not batch_ok:
            log.error(
                "MatMul %r: A of shape %s does not multiply B of shape %s%s",
                self.name,
                a.shape,
                B.tensor().shape,
                " (transB)" if self.transB else "",
            )
            return -1
        result = np.matmul(a, b)
        if result.ndim == 0:
            result = result.reshape(1)
        return store_array(tops[0], result, opt)
