"""ConvolutionDepthWise3D: grouped 3-D convolution (param 7 = group), Convolution3D's
forward with one product per group."""

from __future__ import annotations

from typing import ClassVar

from . import Param
from .convolution3d import Convolution3D


class ConvolutionDepthWise3D(Convolution3D):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Convolution3D.PARAMS[:7] + (Param(7, "group", 1),) + Convolution3D.PARAMS[7:]
    )
