"""Sigmoid on the GPU, in place (input clamped as on the CPU), through the shared activation shader."""

from __future__ import annotations

from ..sigmoid import Sigmoid
from . import _activation as act


class Sigmoid_vulkan(act.ActivationVulkan, Sigmoid):
    def activation_op(self):
        return act.OP_SIGMOID, ()
