"""Requantize: ``y = float2int8(activation(x * scale_in + bias) * scale_out)``, int32 in
(elemsize 4, read as int32), int8 (elemsize 1) out, same shape.

Params: 0 scale_in_data_size, 1 scale_out_data_size, 2 bias_data_size (0: no bias),
3 activation_type, 4 activation_params (ncnn's fused activations, as Convolution's 9 / 10).
Each vector is one value for the blob or one per row of a 2-D blob / per channel of a 3-D /
4-D blob; a 1-D blob takes the first. Weights: scale_in_data, scale_out_data, bias_data (raw
fp32). ``x * scale_in + bias`` is fused, rounding and saturation are ncnn's (``_int8``).
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param
from ._elementwise import load_vector
from ._fused_activation import activation_values, check_activation, fused_activation
from ._int8 import blob_values, count_fits, dequantize, float2int8, per_axis0, per_axis0_or_none, store

log = logging.getLogger("ncnn_c")


class Requantize(Layer):
    PARAMS = (
        Param(0, "scale_in_data_size", 1),
        Param(1, "scale_out_data_size", 1),
        Param(2, "bias_data_size", 0),
        Param(3, "activation_type", 0),
        Param(4, "activation_params", kind="floats"),
    )
    scale_in_data_size: int
    scale_out_data_size: int
    bias_data_size: int
    activation_type: int
    activation_params: np.ndarray

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self.scale_in_data = np.ones(1, np.float32)
        self.scale_out_data = np.ones(1, np.float32)
        self.bias_data: np.ndarray | None = None

    def check_params(self) -> int:
        if self.scale_in_data_size < 1 or self.scale_out_data_size < 1 or self.bias_data_size < 0:
            log.error(
                "Requantize %r: scale_in_data_size %d and scale_out_data_size %d must be >= 1, "
                "bias_data_size %d >= 0",
                self.name, self.scale_in_data_size, self.scale_out_data_size, self.bias_data_size,
            )  # fmt: skip
            return -1
        self.activation_params = activation_values(self.activation_params)
        return check_activation(self)

    def load_model(self, mb) -> int:
        scale_in = load_vector(self, mb, self.scale_in_data_size, "scale_in_data")
        if scale_in is None:
            return -100
        scale_out = load_vector(self, mb, self.scale_out_data_size, "scale_out_data")
        if scale_out is None:
            return -100
        bias = None
        if self.bias_data_size:
            bias = load_vector(self, mb, self.bias_data_size, "bias_data")
            if bias is None:
                return -100
        self.scale_in_data, self.scale_out_data, self.bias_data = scale_in, scale_out, bias
        return 0

    def forward(self, bottom, top, opt) -> int:
        x = blob_values(self, bottom, 4, "int32")
        if x is None:
            return -1
        dims = bottom.dims
        vectors = (
            ("scale_in_data", self.scale_in_data),
            ("scale_out_data", self.scale_out_data),
            ("bias_data", self.bias_data),
        )
        for what, v in vectors:
            if v is not None and not count_fits(self, what, v.size, x.shape, dims):
                return -1
        v = dequantize(x, per_axis0(self.scale_in_data, x, dims), per_axis0_or_none(self.bias_data, x, dims))
        fused_activation(v, self.activation_type, self.activation_params)
        v *= per_axis0(self.scale_out_data, x, dims)
        return store(top, float2int8(v), opt)
