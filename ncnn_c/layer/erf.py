"""Erf: y = erf(x), in place.

numpy has no erf. We evaluate it in float64 and round once: the Maclaurin series (31 terms
of Horner in x^2, truncation below 1e-16) for |x| < 2, and 1 - erfc(|x|) beyond, with
Numerical Recipes' Chebyshev-fitted erfc (fractional error < 1.2e-7 of erfc <= 0.0047, so
< 6e-10 of the result). That is the correctly rounded float32 erf but for rare last-bit
ties; ncnn's SIMD polynomial (the PyPI build) is within a few ulp of it.
"""

from __future__ import annotations

import math

import numpy as np

from ._elementwise import Elementwise

_SERIES_LIMIT = 2.0
# erf(x) = 2/sqrt(pi) * x * sum_n (-1)^n x^(2n) / (n! (2n+1)), highest power first
_SERIES = tuple(
    2.0 / math.sqrt(math.pi) * (-1.0) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(30, -1, -1)
)
# Numerical Recipes' erfcc: erfc(z) = t * exp(-z^2 + P(t)), t = 1 / (1 + z/2); highest power first
_ERFC_P = (
    0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807,
    -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223,
)  # fmt: skip


def erf64(x: np.ndarray) -> np.ndarray:
    """erf of an array, as a new float64 array (see the module doc for the accuracy)."""
    v = np.asarray(x, dtype=np.float64)
    z = np.abs(v)
    small = z < _SERIES_LIMIT
    t2 = np.square(np.where(small, v, 0.0))
    acc = np.full_like(t2, _SERIES[0])
    for c in _SERIES[1:]:
        acc *= t2
        acc += c
    acc *= v
    # the tail: 1 - erfc(|x|) with the sign of x; inf gives 1, NaN stays NaN
    t = 1.0 / (1.0 + 0.5 * z)
    p = np.full_like(t, _ERFC_P[0])
    for c in _ERFC_P[1:]:
        p *= t
        p += c
    tail = 1.0 - t * np.exp(p - np.square(z))
    np.copysign(tail, v, out=tail)
    return np.where(small, acc, tail)


class Erf(Elementwise):
    def apply(self, x, out) -> int:
        np.copyto(out, erf64(x), casting="same_kind")
        return 0
