"""TanH on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..tanh import TanH
from . import _activation as act


class TanH_vulkan(act.ActivationVulkan, TanH):
    def activation_op(self):
        return act.OP_TANH, ()
