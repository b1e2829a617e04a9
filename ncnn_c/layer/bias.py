"""Bias: y = x + bias[channel], in place (param 0 bias_data_size, weights raw fp32).

ncnn adds per channel of the Mat: a 1-D or 2-D blob has a single channel, so it gets
bias[0] everywhere; 3-D / 4-D blobs get one bias per channel.
"""

from __future__ import annotations

import logging

import numpy as np

from . import POSITIVE, Param
from ._elementwise import Elementwise, load_vector

log = logging.getLogger("ncnn_c")


class Bias(Elementwise):
    PARAMS = (Param(0, "bias_data_size", 0, valid=POSITIVE),)
    per_channel = True

    def __init__(self) -> None:
        super().__init__()
        self.bias_data = np.zeros(0, np.float32)

    def load_model(self, mb) -> int:
        bias = load_vector(self, mb, self.bias_data_size, "bias")
        if bias is None:
            return -100
        self.bias_data = bias
        return 0

    def channel_coeffs(self, m):
        need = 1 if m.dims <= 2 else m.c
        if len(self.bias_data) < need:
            log.error("Bias %r: %d biases for a blob of %d channels", self.name, len(self.bias_data), need)
            return None
        return (self.bias_data[0],) if m.dims <= 2 else (self.bias_data[:need],)

    def apply(self, x, out, bias) -> int:
        np.add(x, bias, out=out)
        return 0
