"""Swish on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..swish import Swish
from . import _activation as act


class Swish_vulkan(act.ActivationVulkan, Swish):
    def activation_op(self):
        return act.OP_SWISH, ()
