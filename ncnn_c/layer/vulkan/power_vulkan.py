"""Power on the GPU, in place, through the shared activation shader. Integer powers keep
the sign of a negative base as the CPU's powf does (GLSL's pow is undefined there)."""

from __future__ import annotations

from ..power import Power
from . import _activation as act


class Power_vulkan(act.ActivationVulkan, Power):
    def activation_op(self):
        return act.OP_POWER, (self.power, self.scale, self.shift, float(act.power_kind(self.power)))
