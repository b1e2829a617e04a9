"""Bias on the GPU, in place, through the shared perchannel.comp (1-D/2-D blobs add the
first bias everywhere, as the CPU layer does)."""

from __future__ import annotations

from ..bias import Bias
from ._perchannel import ROW, SHARED, PerChannelVulkan


class Bias_vulkan(PerChannelVulkan, Bias):
    chmodes = (ROW, SHARED)

    def gpu_coeffs(self):
        return None, self.bias_data
