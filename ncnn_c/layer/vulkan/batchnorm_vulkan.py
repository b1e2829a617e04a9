"""BatchNorm on the GPU, in place: the CPU layer's folded per-channel (b, a) as x * b + a
through the shared perchannel.comp."""

from __future__ import annotations

from ..batchnorm import BatchNorm
from ._perchannel import PerChannelVulkan


class BatchNorm_vulkan(PerChannelVulkan, BatchNorm):
    def gpu_coeffs(self):
        return self.b_data, self.a_data
