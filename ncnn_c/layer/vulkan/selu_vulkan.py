"""SELU on the GPU, in place, through the shared activation shader, with alpha * lambda
folded into one float32 as the CPU layer does."""

from __future__ import annotations

import numpy as np

from ..selu import SELU
from . import _activation as act


class SELU_vulkan(act.ActivationVulkan, SELU):
    def activation_op(self):
        lam = np.float32(self.lambda_)
        return act.OP_SELU, (float(lam), float(np.float32(self.alpha) * lam))
