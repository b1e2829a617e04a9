"""LSTM against the PyPI ncnn oracle over the cases of ncnn's tests/test_lstm.cpp (every direction,
hidden state, cell state and projection in and out) on every backend (the CPU and the GPU option
grid), a float64 reference, and bad params and inputs."""

from __future__ import annotations

from _recurrent_cases import RecurrentTests


class TestLSTM(RecurrentTests):
    KIND = "LSTM"
