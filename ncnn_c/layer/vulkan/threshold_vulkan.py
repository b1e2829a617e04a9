"""Threshold on the GPU, in place (strictly above gives 1), through the shared activation shader."""

from __future__ import annotations

from ..threshold import Threshold
from . import _activation as act


class Threshold_vulkan(act.ActivationVulkan, Threshold):
    def activation_op(self):
        return act.OP_THRESHOLD, (self.threshold,)
