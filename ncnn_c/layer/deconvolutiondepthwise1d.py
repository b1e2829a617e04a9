"""DeconvolutionDepthWise1D: grouped transposed convolution along w of a 2-D blob (param 7 =
group), Deconvolution1D with one product per group."""

from __future__ import annotations

from typing import ClassVar

from . import Param
from .deconvolution1d import Deconvolution1D


class DeconvolutionDepthWise1D(Deconvolution1D):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Deconvolution1D.PARAMS[:7] + (Param(7, "group", 1),) + Deconvolution1D.PARAMS[7:]
    )
