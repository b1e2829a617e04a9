"""Element type conversions of Mat data (fp32 <-> fp16); layout conversions join them here."""

from __future__ import annotations

import numpy as np


def float32_to_float16(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).astype(np.float16)


def float16_to_float32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float16).astype(np.float32)
