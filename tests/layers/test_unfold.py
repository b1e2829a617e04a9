"""Unfold against the PyPI ncnn oracle: ncnn's test_unfold forms (kernel, dilation, stride
per axis, explicit pads with pad_value, SAME -233 / -234), each on every backend
(oracle.backends: the CPU and the GPU option grid), exact on the CPU and the fp32 GPU sets
(a copy); bad params."""

from __future__ import annotations

import pytest
from _window_nd_cases import check_rejected
from oracle import backends, check, randn, rng

CASES = [
    ({1: 1}, (3, 5, 6)),
    ({1: 3}, (3, 7, 9)),
    ({1: 3, 11: 2, 3: 2, 13: 1, 2: 2, 12: 1, 4: 1, 14: 0, 15: 2, 16: 1}, (4, 8, 9)),
    ({1: 3, 3: 2, 4: -233}, (3, 7, 9)),
    ({1: 4, 3: 3, 4: -234, 18: 0.5}, (3, 8, 10)),
    ({1: 3, 4: 1, 18: -1.0}, (2, 6, 6)),
    ({1: 5, 3: 2, 4: 2}, (16, 32, 32)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[0]))
@pytest.mark.parametrize("backend", backends("Unfold"))
def test_unfold(case, backend):
    params, shape = case
    check(backend, "Unfold", params, [], [randn(rng("unfold", shape), shape)], tol=0.0, tol_fp32=0.0)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({1: 0}, (2, 4, 4), "kernel_w"),
        ({1: 2, 13: 0}, (2, 4, 4), "stride_h"),
        ({1: 2, 12: -1}, (2, 4, 4), "dilation_h"),
        ({1: 2}, (4, 4), "3-D"),
        ({1: 5}, (2, 4, 4), "smaller than the kernel"),
    ],
    ids=str,
)
def test_unfold_rejects(params, shape, key, caplog):
    check_rejected("Unfold", params, [], shape, key, caplog)
