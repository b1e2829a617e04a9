"""The GPU harness's fp16 comparison (tests/oracle.py): what it forgives and what it does not."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import _fp16_compare, rel_l2

REF = np.array([1.0, 3.4e38, -3.4e38, 65503.0, 2.0, 1e6], np.float32)


@pytest.mark.parametrize(
    "got,ok",
    [
        ([1.0, np.inf, -np.inf, np.inf, 2.0, np.inf], True),  # overflow to infinities
        ([1.0, 65504, -65504, 65504, 2.0, 65504], True),  # a device converting toward zero
        ([1.0, 65504, -65504, 65503, 2.0, np.inf], True),  # the edge value either way
        ([1.0, -np.inf, -np.inf, 65504, 2.0, np.inf], False),  # wrong sign beyond the range
        ([1.0, 1000.0, -np.inf, 65504, 2.0, np.inf], False),  # finite where fp16 overflows
        ([1.0, np.inf, -np.inf, 65504, 3.0, np.inf], False),  # an ordinary value wrong
        ([1.0, np.nan, -np.inf, 65504, 2.0, np.inf], False),  # NaN is never forgiven
    ],
)
def test_fp16_compare(got, ok):
    err = rel_l2(*_fp16_compare(np.array(got, np.float32), REF))
    assert (err <= 1e-2) == ok, err
