"""GRU on the GPU (every direction, optional hidden state in and out): one recurrent.comp
dispatch for the whole sequence."""

from __future__ import annotations

from ..gru import GRU
from ._recurrent import RecurrentVulkan


class GRU_vulkan(RecurrentVulkan, GRU):
    GRU_SHADER = 1
