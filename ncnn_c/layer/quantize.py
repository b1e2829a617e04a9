"""Quantize: ``y = float2int8(x * scale)``, fp32 in, int8 (elemsize 1) out, same shape.

Params: 0 scale_data_size (1: one scale for the blob; else one per row of a 2-D blob or per
channel of a 3-D / 4-D blob; a 1-D blob always takes the first). Weights: scale_data (raw
fp32). Rounding and saturation are ncnn's (``_int8.float2int8``).
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param
from ._elementwise import load_vector
from ._int8 import blob_values, count_fits, float2int8, per_axis0, store

log = logging.getLogger("ncnn_c")


class Quantize(Layer):
    PARAMS = (Param(0, "scale_data_size", 1),)
    scale_data_size: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self.scale_data = np.ones(1, np.float32)

    def check_params(self) -> int:
        if self.scale_data_size < 1:
            log.error("Quantize %r: scale_data_size %d must be >= 1", self.name, self.scale_data_size)
            return -1
        return 0

    def load_model(self, mb) -> int:
        scale = load_vector(self, mb, self.scale_data_size, "scale_data")
        if scale is None:
            return -100
        self.scale_data = scale
        return 0

    def forward(self, bottom, top, opt) -> int:
        x = blob_values(self, bottom, 4, "fp32")
        if x is None:
            return -1
        if not count_fits(self, "scale_data", self.scale_data.size, x.shape, bottom.dims):
            return -1
        scale = per_axis0(self.scale_data, x, bottom.dims)
        return store(top, float2int8(np.multiply(x, scale, dtype=np.float32)), opt)
