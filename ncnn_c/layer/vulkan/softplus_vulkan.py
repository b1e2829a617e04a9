"""Softplus on the GPU, in place, through the shared activation shader."""

from __future__ import annotations

from ..softplus import Softplus
from . import _activation as act


class Softplus_vulkan(act.ActivationVulkan, Softplus):
    def activation_op(self):
        return act.OP_SOFTPLUS, ()
