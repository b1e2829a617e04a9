"""PReLU on the GPU, in place, through the shared perchannel.comp: one slope per channel,
or one slope for the whole blob."""

from __future__ import annotations

from ..prelu import PReLU
from ._perchannel import ELEMENT, ROW, SHARED, PerChannelVulkan


class PReLU_vulkan(PerChannelVulkan, PReLU):
    prelu = 1

    @property
    def chmodes(self):
        return (SHARED,) if self.num_slope == 1 else (ROW, ELEMENT)

    def gpu_coeffs(self):
        return self.slope_data, None
