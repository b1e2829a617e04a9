"""CELU on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..celu import CELU
from . import _activation as act


class CELU_vulkan(act.ActivationVulkan, CELU):
    def activation_op(self):
        return act.OP_CELU, (self.alpha,)
