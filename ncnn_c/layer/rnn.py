"""RNN (fp32): ``h_t = tanh(W_xc x_t + b_c + W_hc h_{t-1})``, the output being h_t.

Forward, reverse or bidirectional, with an optional hidden state in and out (see _recurrent).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from . import Param
from ._recurrent import RECURRENT_PARAMS, Recurrent


class RNN(Recurrent):
    PARAMS: ClassVar[tuple[Param, ...]] = RECURRENT_PARAMS
    GATES = 1
    BIAS_ROWS = 1
    STATES = ("hidden",)

    def _run(self, d: int, xw: np.ndarray, states: list[np.ndarray], out: np.ndarray, reverse: bool) -> None:
        h = states[0]
        whc_t = self._whc[d].T
        xw += self._bias[d][0]
        T = xw.shape[0]
        for t in range(T):
            ti = T - 1 - t if reverse else t
            h[:] = np.tanh(xw[ti] + h @ whc_t)
            out[ti] = h
