"""LSTM on the GPU (with or without the hidden-state projection, every direction, optional
hidden and cell states in and out): one recurrent.comp dispatch for the whole sequence."""

from __future__ import annotations

from ..lstm import LSTM
from ._recurrent import RecurrentVulkan


class LSTM_vulkan(RecurrentVulkan, LSTM):
    GRU_SHADER = 0
