"""The shared GPU form of the element-wise activations: one shader, ``activation.comp``.

Every activation layer (BNLL, Clip, ELU, Exp, Log, GELU, HardSigmoid, HardSwish, Mish, Power,
SELU, Sigmoid, Swish, TanH, Threshold, CELU, Erf, Shrink, Softplus, PReLU with one slope) and
every UnaryOp op_type runs the same in-place scalar shader; an op id and up to four float
parameters, derived once from the layer's params, are its specialization constants.

Why one shader rather than ncnn's one file per activation: the SPIR-V cache keys entries by
(shader, option bits), so one file costs one glslang compile per option set (five, not ~45x5)
and one small source hash to invalidate; the specialization constants fold the op chain away
when the driver builds each pipeline, so the per-element code is exactly that of a dedicated
shader, and equal layers (every Sigmoid of a net) still share one cached pipeline. Packed
blobs run the same source with the constant ``pack4`` set (a vec4 view of the blob: one load
and store per packed element), a second pipeline created only when packing is on.
"""

from __future__ import annotations

import math

import numpy as np

from . import VulkanLayer, record_elementwise, shape4

# activation.comp op ids; UnaryOp's op_type 0..27 are used as they are
OP_BNLL = 100
OP_CLIP = 101
OP_ELU = 102
OP_EXP = 103
OP_EXP_BASE = 104
OP_LOG = 105
OP_LOG_BASE = 106
OP_GELU = 107
OP_GELU_FAST = 108
OP_HARDSIGMOID = 109
OP_HARDSWISH = 110
OP_MISH = 111
OP_POWER = 112
OP_SELU = 113
OP_SIGMOID = 114
OP_SWISH = 115
OP_TANH = 116
OP_THRESHOLD = 117
OP_LEAKY = 118
OP_CELU = 119
OP_ERF = 120
OP_SHRINK = 121
OP_SOFTPLUS = 122

# activation.comp's power kinds (its constant d)
POWER_REAL, POWER_EVEN, POWER_ODD, POWER_ONE = 0, 1, 2, 3


def f32(v: float) -> float:
    """``v`` rounded to float32 (what the CPU layer computes with), as a Python float."""
    return float(np.float32(v))


def power_kind(power: float) -> int:
    """How activation.comp raises to ``power``: integers keep the sign of a negative base
    (as powf does; GLSL's pow is undefined there), 1 is the identity."""
    if power == 1.0:
        return POWER_ONE
    if math.isfinite(power) and power == int(power):
        return POWER_ODD if int(power) % 2 else POWER_EVEN
    return POWER_REAL


class ActivationVulkan(VulkanLayer):
    """Mixin ahead of ``VulkanLayer``'s CPU partner: ``activation_op`` says which op runs."""

    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_activation = None
        self.pipeline_activation_pack4 = None

    def activation_op(self) -> tuple[int, tuple[float, ...]]:
        """(op id, float parameters a, b, c, d as far as used) from this layer's params."""
        raise NotImplementedError

    def create_pipeline_vk(self, opt) -> int:
        op, args = self.activation_op()
        # unused parameters stay 0 so equal layers share one pipeline
        spec = [int(op)] + [f32(v) for v in args] + [0.0] * (4 - len(args))
        pack1 = self.may_see_elempack(1, opt)
        self.pipeline_activation = self.new_pipeline("activation", opt, spec + [0], needed=pack1)
        if self.pipeline_activation is None:
            return -1
        if opt.use_packing_layout:
            pack4 = self.may_see_elempack(4, opt)
            self.pipeline_activation_pack4 = self.new_pipeline("activation", opt, spec + [1], needed=pack4)
            if self.pipeline_activation_pack4 is None:
                return -1
        return 0

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        if bottom_top.elempack == 4 and self.pipeline_activation_pack4 is not None:
            # one invocation per packed element
            w, h, d, c, cstep = shape4(bottom_top)
            cmd.record_pipeline(
                self.pipeline_activation_pack4, [bottom_top], [w * h * d, c, cstep], (w * h * d, c, 1)
            )
            return 0
        record_elementwise(cmd, self.pipeline_activation, bottom_top)
        return 0
