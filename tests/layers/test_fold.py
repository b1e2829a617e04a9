"""Fold against the PyPI ncnn oracle: ncnn's test_fold forms (kernel, dilation, stride per
axis, pads cut off, output size), exact up to the order overlapping windows add in, each on
every backend (oracle.backends: the CPU and the GPU option grid); bad params and inputs
whose columns do not match the windows."""

from __future__ import annotations

import pytest
from _window_nd_cases import TOL, check_rejected
from oracle import backends, check, randn, rng

# (params, input shape (channels * maxk, windows))
CASES = [
    ({1: 1, 20: 6, 21: 5}, (3, 30)),
    ({1: 3, 20: 7, 21: 9}, (27, 35)),
    ({1: 2, 3: 2, 20: 8, 21: 6}, (12, 12)),
    ({1: 3, 2: 2, 4: 1, 14: 2, 20: 9, 21: 7}, (18, 49)),
    ({1: 3, 11: 2, 3: 2, 13: 1, 4: 1, 20: 10, 21: 7}, (18, 40)),
    ({1: 3, 12: 2, 15: 0, 16: 1, 4: 1, 20: 16, 21: 16}, (144, 210)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[0]))
@pytest.mark.parametrize("backend", backends("Fold"))
def test_fold(case, backend):
    params, shape = case
    check(backend, "Fold", params, [], [randn(rng("fold", shape), shape)], tol=TOL)


@pytest.mark.parametrize(
    "params,shape,key",
    [
        ({1: 3}, (9, 4), "output_w"),
        ({1: 3, 20: 4, 3: 0}, (9, 4), "stride_w"),
        ({1: 3, 20: 4, 4: -233}, (9, 4), "pad"),
        ({1: 3, 20: 4}, (9, 5), "windows"),
        ({1: 3, 20: 4}, (10, 4), "windows"),
        ({1: 3, 20: 4}, (1, 9, 4), "2-D"),
    ],
    ids=str,
)
def test_fold_rejects(params, shape, key, caplog):
    check_rejected("Fold", params, [], shape, key, caplog)
