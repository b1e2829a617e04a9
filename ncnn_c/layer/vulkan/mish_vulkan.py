"""Mish on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..mish import Mish
from . import _activation as act


class Mish_vulkan(act.ActivationVulkan, Mish):
    def activation_op(self):
        return act.OP_MISH, ()
