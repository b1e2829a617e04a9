"""Dequantize: ``y = x * scale + bias``, int32 in (elemsize 4, read as int32), fp32 out.

Params: 0 scale_data_size, 1 bias_data_size (0: no bias). Each of scale and bias is one
value for the blob or one per row of a 2-D blob / per channel of a 3-D / 4-D blob; a 1-D
blob takes the first. Weights: scale_data, then bias_data (raw fp32). The multiply-add is
fused, as ncnn's x86 kernels compute it (``_int8.dequantize``).
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param
from ._elementwise import load_vector
from ._int8 import blob_values, count_fits, dequantize, per_axis0, per_axis0_or_none, store

log = logging.getLogger("ncnn_c")


class Dequantize(Layer):
    PARAMS = (Param(0, "scale_data_size", 1), Param(1, "bias_data_size", 0))
    scale_data_size: int
    bias_data_size: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self.scale_data = np.ones(1, np.float32)
        self.bias_data: np.ndarray | None = None

    def check_params(self) -> int:
        if self.scale_data_size < 1 or self.bias_data_size < 0:
            log.error(
                "Dequantize %r: scale_data_size %d must be >= 1 and bias_data_size %d >= 0",
                self.name, self.scale_data_size, self.bias_data_size,
            )  # fmt: skip
            return -1
        return 0

    def load_model(self, mb) -> int:
        scale = load_vector(self, mb, self.scale_data_size, "scale_data")
        if scale is None:
            return -100
        bias = None
        if self.bias_data_size:
            bias = load_vector(self, mb, self.bias_data_size, "bias_data")
            if bias is None:
                return -100
        self.scale_data, self.bias_data = scale, bias
        return 0

    def forward(self, bottom, top, opt) -> int:
        x = blob_values(self, bottom, 4, "int32")
        if x is None:
            return -1
        dims = bottom.dims
        for what, v in (("scale_data", self.scale_data), ("bias_data", self.bias_data)):
            if v is not None and not count_fits(self, what, v.size, x.shape, dims):
                return -1
        y = dequantize(x, per_axis0(self.scale_data, x, dims), per_axis0_or_none(self.bias_data, x, dims))
        return store(top, y, opt)
