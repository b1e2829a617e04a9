"""ConvolutionDepthWise1D on the GPU: the GPU ConvolutionDepthWise's shaders on a 2-D blob.

A 2-D blob (h = channels, w = length) is the 3-D case with h = 1 and channels w elements
apart, so ``DepthwiseGpu`` (convolutiondepthwise_vulkan.py) serves it unchanged: depthwise
layers keep the bottom's packing (elempack 4 packs channels), grouped ones run elempack 1.
Pads (SAME included) come from the CPU class's ``pads``. dynamic_weight (weights as input
blobs) runs on the CPU (VulkanLayer.check_params), as ncnn's Vulkan form does.
"""

from __future__ import annotations

import logging

import numpy as np

from .._fused_activation import activation_values
from ..convolutiondepthwise1d import ConvolutionDepthWise1D
from .convolutiondepthwise_vulkan import DepthwiseGpu

log = logging.getLogger("ncnn_c")


class ConvolutionDepthWise1D_vulkan(DepthwiseGpu, ConvolutionDepthWise1D):
    def __init__(self) -> None:
        super().__init__()
        # the 2-D shaders see a kernel of height 1 over rows of height 1
        self.kernel_h = self.dilation_h = self.stride_h = 1

    def num_input(self) -> int:
        """Input channels the weights expect."""
        return self.weight_data_size * self.group // (self.kernel_w * self.num_output)

    def gpu_weights(self) -> tuple[np.ndarray, np.ndarray | None]:
        assert self._weight is not None  # load_model() prepared it
        return self._weight.reshape(self.num_output, -1), self._bias

    def gpu_activation(self) -> np.ndarray:
        return activation_values(self.activation_params)

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims != 2:
            log.error("ConvolutionDepthWise1D %r: needs a 2-D blob, got dims %d", self.name, bottom.dims)
            return -1
        bottom = self.gpu_bottom(cmd, bottom, opt)
        if isinstance(bottom, int):
            return bottom
        left, right = self.pads((bottom.w,))
        out = self.output_shape((bottom.w,), (left, right))
        if out is None:
            return -1
        return self.record_depthwise(cmd, bottom, top, opt, (bottom.w, 1, bottom.w), out, (left, 0))
