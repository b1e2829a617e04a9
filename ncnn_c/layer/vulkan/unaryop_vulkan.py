"""UnaryOp (every op_type) on the GPU, in place: op_type is the shared activation shader's op id."""

from __future__ import annotations

from ..unaryop import UnaryOp
from . import _activation as act


class UnaryOp_vulkan(act.ActivationVulkan, UnaryOp):
    def activation_op(self):
        return self.op_type, ()
