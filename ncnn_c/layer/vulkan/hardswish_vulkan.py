"""HardSwish on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..hardswish import HardSwish
from . import _activation as act


class HardSwish_vulkan(act.ActivationVulkan, HardSwish):
    def activation_op(self):
        return act.OP_HARDSWISH, (self.alpha, self.beta)
