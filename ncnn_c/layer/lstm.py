"""LSTM (fp32), gates in ncnn's order I, F, O, G::

    i, f, o = sigmoid(...), g = tanh(...)     each W_xc x_t + b_c + W_hc h_{t-1}
    c_t = f * c_{t-1} + i * g
    h_t = o * tanh(c_t)                       then h_t = W_hr h_t when hidden_size != num_output

``hidden_size`` (param 3) is the cell width; when it differs from ``num_output`` a fourth
weight, ``weight_hr`` (num_output x hidden_size), projects the hidden state (LSTMP). Optional
hidden and cell states in and out follow the sequence (see _recurrent).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from . import Param
from ._recurrent import RECURRENT_PARAMS, Recurrent, sigmoid


class LSTM(Recurrent):
    PARAMS: ClassVar[tuple[Param, ...]] = (*RECURRENT_PARAMS, Param(3, "hidden_size", "num_output"))
    GATES = 4
    BIAS_ROWS = 4
    STATES = ("hidden", "cell")
    hidden_size: int

    @property
    def units(self) -> int:
        return self.hidden_size

    def state_sizes(self) -> tuple[int, ...]:
        return (self.num_output, self.hidden_size)

    def _run(self, d: int, xw: np.ndarray, states: list[np.ndarray], out: np.ndarray, reverse: bool) -> None:
        h, c = states
        u = self.hidden_size
        whc_t = self._whc[d].T
        whr = self._whr[d]
        whr_t = whr.T if whr is not None else None
        xw += self._bias[d].reshape(-1)
        T = xw.shape[0]
        for t in range(T):
            ti = T - 1 - t if reverse else t
            gates = xw[ti] + h @ whc_t
            i = sigmoid(gates[:u])
            f = sigmoid(gates[u : 2 * u])
            o = sigmoid(gates[2 * u : 3 * u])
            g = np.tanh(gates[3 * u :])
            c[:] = f * c + i * g
            hh = o * np.tanh(c)
            h[:] = hh if whr_t is None else hh @ whr_t
            out[ti] = h
