"""GRU against the PyPI ncnn oracle over the cases of ncnn's tests/test_gru.cpp (every direction,
hidden state in and out) on every backend (the CPU and the GPU option grid), a float64
reference, and bad params and inputs."""

from __future__ import annotations

from _recurrent_cases import RecurrentTests


class TestGRU(RecurrentTests):
    KIND = "GRU"
