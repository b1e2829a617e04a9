"""Shrink on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..shrink import Shrink
from . import _activation as act


class Shrink_vulkan(act.ActivationVulkan, Shrink):
    def activation_op(self):
        return act.OP_SHRINK, (self.bias, self.lambd)
