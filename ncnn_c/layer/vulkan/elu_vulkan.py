"""ELU on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..elu import ELU
from . import _activation as act


class ELU_vulkan(act.ActivationVulkan, ELU):
    def activation_op(self):
        return act.OP_ELU, (self.alpha,)
