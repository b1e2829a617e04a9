"""Deconvolution1D: transposed convolution along w of a 2-D blob (h = channels), the N-D
transposed convolution of Deconvolution3D with one spatial axis."""

from __future__ import annotations

from typing import ClassVar

from . import Param
from .deconvolution3d import Deconvolution3D


class Deconvolution1D(Deconvolution3D):
    AXES = "w"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "num_output", 0),
        Param(1, "kernel_w", 0),
        Param(2, "dilation_w", 1),
        Param(3, "stride_w", 1),
        Param(4, "pad_left", 0),
        Param(5, "bias_term", 0),
        Param(6, "weight_data_size", 0),
        Param(9, "activation_type", 0),
        Param(10, "activation_params", kind="floats"),
        Param(15, "pad_right", "pad_left"),
        Param(18, "output_pad_right", 0),
        Param(20, "output_w", 0),
        Param(28, "dynamic_weight", 0),
    )
