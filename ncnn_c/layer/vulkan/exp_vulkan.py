"""Exp on the GPU, in place, through the shared activation shader; a base other than e
becomes exp2 of the argument times log2(base)."""

from __future__ import annotations

import math

from ..exp import Exp
from . import _activation as act


class Exp_vulkan(act.ActivationVulkan, Exp):
    def activation_op(self):
        if self.base == -1.0:
            return act.OP_EXP, (0.0, self.scale, self.shift)
        return act.OP_EXP_BASE, (math.log2(act.f32(self.base)), self.scale, self.shift)
