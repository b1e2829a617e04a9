"""GRU against the PyPI ncnn oracle over the cases of ncnn's tests/test_gru.cpp (every direction,
hidden state in and out), a float64 reference, a Vulkan net, and bad params."""

from __future__ import annotations

from _recurrent_cases import RecurrentTests


class TestGRU(RecurrentTests):
    KIND = "GRU"
