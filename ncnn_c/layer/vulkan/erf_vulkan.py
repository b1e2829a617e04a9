"""Erf on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..erf import Erf
from . import _activation as act


class Erf_vulkan(act.ActivationVulkan, Erf):
    def activation_op(self):
        return act.OP_ERF, ()
