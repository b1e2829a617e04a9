"""Clip on the GPU, in place (max applied last, as ncnn), through the shared activation shader."""

from __future__ import annotations

from ..clip import Clip
from . import _activation as act


class Clip_vulkan(act.ActivationVulkan, Clip):
    def activation_op(self):
        return act.OP_CLIP, (self.min, self.max)
