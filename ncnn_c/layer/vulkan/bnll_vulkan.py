"""BNLL (softplus) on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..bnll import BNLL
from . import _activation as act


class BNLL_vulkan(act.ActivationVulkan, BNLL):
    def activation_op(self):
        return act.OP_BNLL, ()
