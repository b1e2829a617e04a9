"""Deconvolution1D on the GPU: the GPU Deconvolution's gather shaders on a 2-D blob.

A 2-D blob (h = channels, w = length) is the 3-D case with h = 1 and channels w elements
apart, so ``DeconvolutionGpu`` (deconvolution_vulkan.py) serves it unchanged: weights
[outc][inc][kw] are Deconvolution's with kernel_h = 1, elempack 4 packs channels as there.
The crop (pads, or output_w with SAME pads) comes from the CPU class's ``crop`` of the full
``_geometry.transposed_shape``. dynamic_weight (weights as input blobs) runs on the CPU
(VulkanLayer.check_params), as ncnn's Vulkan form does.
"""

from __future__ import annotations

import logging

from .._geometry import transposed_shape
from ..deconvolution1d import Deconvolution1D
from ..deconvolution3d import OUTPUT_PAD_NAMES
from .deconvolution_vulkan import DeconvolutionGpu

log = logging.getLogger("ncnn_c")


class Deconvolution1D_vulkan(DeconvolutionGpu, Deconvolution1D):
    def __init__(self) -> None:
        super().__init__()
        # the 2-D shaders see a kernel of height 1 over rows of height 1
        self.kernel_h = self.dilation_h = self.stride_h = 1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims != 2:
            log.error("Deconvolution1D %r: needs a 2-D blob, got dims %d", self.name, bottom.dims)
            return -1
        bottom = self.gpu_bottom(cmd, bottom, opt)
        if isinstance(bottom, int):
            return bottom
        output_pads = tuple(int(getattr(self, OUTPUT_PAD_NAMES[a])) for a in self.AXES)
        full = transposed_shape((bottom.w,), self.extents(), self._per_axis("stride"), output_pads)
        cut = self.crop(full)
        if cut is None:
            return -1
        left, right = cut
        size = (bottom.w, 1, bottom.w)
        return self.record_deconvolution(cmd, bottom, top, opt, size, (full[0] - left - right,), (left, 0))
