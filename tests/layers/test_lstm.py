"""LSTM against the PyPI ncnn oracle over the cases of ncnn's tests/test_lstm.cpp (every direction,
hidden state, cell state and projection in and out), a float64 reference, a Vulkan net, and bad params."""

from __future__ import annotations

import pytest
from _recurrent_cases import (
    all_cases,
    check_bad_params,
    check_case,
    check_float64,
    check_one_d_blobs,
    ncnn_case,
)
from _vulkan_sandwich import check_in_vulkan_net

KIND = "LSTM"
CASES = all_cases(KIND)


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_ncnn_cases(case):
    check_case(KIND, case)


@pytest.mark.parametrize("mode", ["plain", "with_hidden"])
@pytest.mark.parametrize("case", [(19, 15, 8, 0), (17, 8, 8, 1), (2, 5, 79, 2, 33)], ids=str)
def test_float64_reference(case, mode):
    check_float64(KIND, ncnn_case(KIND, case, mode))


@pytest.mark.gpu
def test_in_vulkan_net():
    params, weights, inputs, n_outputs = ncnn_case(KIND, (16, 8, 7, 2), "with_hidden")
    check_in_vulkan_net(KIND, params, weights, inputs, n_outputs, tol=3e-5)


def test_bad_params(caplog):
    check_bad_params(caplog, KIND)


def test_one_d_blobs():
    check_one_d_blobs(KIND)
