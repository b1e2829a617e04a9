"""DeconvolutionDepthWise3D: grouped 3-D transposed convolution (param 7 = group),
Deconvolution3D's forward with one product per group."""

from __future__ import annotations

from typing import ClassVar

from . import Param
from .deconvolution3d import Deconvolution3D


class DeconvolutionDepthWise3D(Deconvolution3D):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Deconvolution3D.PARAMS[:7] + (Param(7, "group", 1),) + Deconvolution3D.PARAMS[7:]
    )
