"""Log on the GPU, in place, through the shared activation shader; a base other than e
multiplies by the float32 1 / log(base) the CPU layer uses."""

from __future__ import annotations

import numpy as np

from ..log import Log
from . import _activation as act


class Log_vulkan(act.ActivationVulkan, Log):
    def activation_op(self):
        if self.base == -1.0:
            return act.OP_LOG, (0.0, self.scale, self.shift)
        inv = np.float32(1.0) / np.log(np.float32(self.base))
        return act.OP_LOG_BASE, (float(inv), self.scale, self.shift)
