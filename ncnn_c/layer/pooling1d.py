"""Pooling1D: max / average pooling along w of a 2-D blob (h = channels), Pooling3D's
N-D pooling with one spatial axis."""

from __future__ import annotations

from typing import ClassVar

from . import Param
from .pooling3d import Pooling3D


class Pooling1D(Pooling3D):
    AXES = "w"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "pooling_type", 0),
        Param(1, "kernel_w", 0),
        Param(2, "stride_w", 1),
        Param(3, "pad_left", 0),
        Param(4, "global_pooling", 0),
        Param(5, "pad_mode", 0),
        Param(6, "avgpool_count_include_pad", 0),
        Param(7, "adaptive_pooling", 0),
        Param(8, "out_w", 0),
        Param(14, "pad_right", "pad_left"),
    )
