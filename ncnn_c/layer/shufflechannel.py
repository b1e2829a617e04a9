"""ShuffleChannel: interleave channel groups (ShuffleNet), or undo it with ``reverse``.

With g groups of k channels, output channel j*g + i is input channel i*k + j: a transpose of
the (g, k) channel grid. ``reverse`` uses k (= channels / group) groups instead, which is the
inverse permutation.
"""

from __future__ import annotations

import logging

import numpy as np

from ..mat import Mat
from . import Layer, Param

log = logging.getLogger("ncnn_c")


class ShuffleChannel(Layer):
    # attributes the PARAMS table sets (declared for type checkers)
    group: int
    reverse: int

    PARAMS = (Param(0, "group", 1), Param(1, "reverse", 0))

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def check_params(self) -> int:
        if self.group < 1:
            log.error("ShuffleChannel %r: group %d must be >= 1", self.name, self.group)
            return -1
        return 0

    def forward(self, bottom: Mat, top: Mat, opt) -> int:
        channels = bottom.c
        if channels % self.group:
            log.error(
                "ShuffleChannel %r: %d channels do not split into %d groups", self.name, channels, self.group
            )
            return -1
        groups = channels // self.group if self.reverse else self.group
        per_group = channels // groups
        top.create_like(bottom, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        x = bottom.tensor()
        out = top.tensor()
        if bottom.dims < 3:
            np.copyto(out, x)  # one channel: nothing to shuffle
            return 0
        # splitting the channel axis is a view even across padded channels
        rest = x.shape[1:]
        np.copyto(out.reshape(per_group, groups, *rest), x.reshape(groups, per_group, *rest).swapaxes(0, 1))
        return 0
