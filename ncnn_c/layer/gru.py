"""GRU (fp32), ncnn's gates R (reset), U (update), N (new)::

    r = sigmoid(W_xr x_t + b_r + W_hr h_{t-1})
    u = sigmoid(W_xu x_t + b_u + W_hu h_{t-1})
    n = tanh(W_xn x_t + b_wn + r * (W_hn h_{t-1} + b_bn))
    h_t = (1 - u) * n + u * h_{t-1}

``bias_c`` holds four rows per direction: b_r, b_u, b_wn, b_bn. Optional hidden state in
and out (see _recurrent).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from . import Param
from ._recurrent import RECURRENT_PARAMS, Recurrent, sigmoid


class GRU(Recurrent):
    PARAMS: ClassVar[tuple[Param, ...]] = RECURRENT_PARAMS
    GATES = 3
    BIAS_ROWS = 4
    STATES = ("hidden",)

    def _run(self, d: int, xw: np.ndarray, states: list[np.ndarray], out: np.ndarray, reverse: bool) -> None:
        h = states[0]
        n = self.num_output
        whc_t = self._whc[d].T
        b_r, b_u, b_wn, b_bn = self._bias[d]
        xw[:, :n] += b_r
        xw[:, n : 2 * n] += b_u
        xw[:, 2 * n :] += b_wn
        one = np.float32(1.0)
        T = xw.shape[0]
        for t in range(T):
            ti = T - 1 - t if reverse else t
            hw = h @ whc_t
            r = sigmoid(xw[ti, :n] + hw[:n])
            u = sigmoid(xw[ti, n : 2 * n] + hw[n : 2 * n])
            new = np.tanh(xw[ti, 2 * n :] + r * (hw[2 * n :] + b_bn))
            h[:] = (one - u) * new + u * h
            out[ti] = h
