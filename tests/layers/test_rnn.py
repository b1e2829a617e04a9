"""RNN against the PyPI ncnn oracle over the cases of ncnn's tests/test_rnn.cpp (every direction,
hidden state in and out) on the CPU and in a Vulkan net (ncnn has no GPU form of RNN: the net runs
it on the CPU), a float64 reference, and bad params and inputs."""

from __future__ import annotations

from _recurrent_cases import RecurrentTests


class TestRNN(RecurrentTests):
    KIND = "RNN"
