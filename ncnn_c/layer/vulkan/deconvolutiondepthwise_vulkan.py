"""DeconvolutionDepthWise on the GPU: Deconvolution_vulkan with its group count.

The GPU Deconvolution already computes grouped layers (weights per group, one dispatch z
per group) and the depthwise form (its own shaders, elempack 1 and 4), so this class only
puts the depthwise CPU class, whose params add ``group``, under it: the MRO is
DeconvolutionDepthWise_vulkan, Deconvolution_vulkan, VulkanLayer, DeconvolutionDepthWise,
Deconvolution, so the GPU hooks still run first.
"""

from __future__ import annotations

from ..deconvolutiondepthwise import DeconvolutionDepthWise
from .deconvolution_vulkan import Deconvolution_vulkan


class DeconvolutionDepthWise_vulkan(Deconvolution_vulkan, DeconvolutionDepthWise):
    pass
