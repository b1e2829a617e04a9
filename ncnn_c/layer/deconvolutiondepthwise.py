"""DeconvolutionDepthWise: grouped transposed convolution (``group`` = channels is depthwise).

The same computation as Deconvolution (see deconvolution.py) with the channels split into
``group`` independent blocks: a batched GEMM over the groups (a broadcast multiply in the
depthwise case), then the shared col2im scatter-add, crop and fused activation.
"""

from __future__ import annotations

from . import Param
from .deconvolution import Deconvolution


class DeconvolutionDepthWise(Deconvolution):
    PARAMS = (*Deconvolution.PARAMS, Param(7, "group", 1))
