"""HardSigmoid on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..hardsigmoid import HardSigmoid
from . import _activation as act


class HardSigmoid_vulkan(act.ActivationVulkan, HardSigmoid):
    def activation_op(self):
        return act.OP_HARDSIGMOID, (self.alpha, self.beta)
