"""GELU (exact, or the tanh form with fast_gelu) on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..gelu import GELU
from . import _activation as act


class GELU_vulkan(act.ActivationVulkan, GELU):
    def activation_op(self):
        return (act.OP_GELU_FAST if self.fast_gelu else act.OP_GELU), ()
