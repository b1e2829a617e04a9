"""InnerProduct (fully connected, fp32): one BLAS product on weights prepared at load time.

As in ncnn, a 2-D input whose rows have ``num_input`` values is a batch of rows (one GEMM
giving a (rows, num_output) blob); any other input (1-D, 2-D, 3-D or 4-D) is flattened to
one vector of ``num_input`` values giving a 1-D blob of ``num_output`` values.

int8 (``int8_scale_term``, param 8, non-zero) as ncnn: after the bias the model holds one
weight scale per output and the bottom blob's scale; fp32-stored weights are quantized at
load, int8-stored ones used as they are. With ``opt.use_int8_inference`` the input is quantized
with the bottom scale (an int8 input is used as it is), summed exactly in int32, dequantized by
``1 / (bottom_scale * weight_scale)`` fused with the bias, and activated: an fp32 top (ncnn's
InnerProduct never requantizes). Without it the layer runs in fp32 on the dequantized weights.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from ..mat import Mat
from . import Param
from ._fused_activation import check_activation, fused_activation
from ._geometry import WeightBias
from ._int8 import Int8Scales, float2int8, int8_matmul, load_int8_scales, quantized_weights
from .deconvolution import flat_weights

log = logging.getLogger("ncnn_c")


class InnerProduct(WeightBias):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "num_output", 0),
        Param(1, "bias_term", 0),
        Param(2, "weight_data_size", 0),
        Param(8, "int8_scale_term", 0),
        Param(9, "activation_type", 0),
        Param(10, "activation_params", kind="floats"),
    )
    DERIVED: ClassVar[tuple[str, ...]] = ("_weight",)
    num_output: int
    bias_term: int
    weight_data_size: int
    int8_scale_term: int
    activation_type: int
    activation_params: np.ndarray

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self._weight: np.ndarray | None = None  # (num_output, num_input), C-contiguous
        self._bias: np.ndarray | None = None
        self._int8: Int8Scales | None = None
        self._w8: np.ndarray | None = None  # (num_output, num_input) int8

    def check_params(self) -> int:
        if self.num_output <= 0 or self.weight_data_size <= 0 or self.weight_data_size % self.num_output:
            log.error(
                "InnerProduct %r: weight_data_size %d is not a multiple of num_output %d",
                self.name,
                self.weight_data_size,
                self.num_output,
            )
            return -1
        return check_activation(self)

    def load_scales(self, mb) -> int:
        if not self.int8_scale_term:
            if self.weight_data.elemsize == 1:
                log.error("InnerProduct %r: int8-stored weight_data needs int8_scale_term (8)", self.name)
                return -100
            return 0
        got = load_int8_scales(self, mb, self.num_output, False)
        if got is None:
            return -100
        self._int8 = Int8Scales(got[0], got[1], None)
        return 0

    def _prepare(self) -> None:
        self._bias = flat_weights(self.bias_data) if self.bias_term else None
        if not self.int8_scale_term:
            self._weight = flat_weights(self.weight_data).reshape(self.num_output, -1)
            return
        assert self._int8 is not None  # load_scales ran
        rows = self.weight_data.tensor().reshape(self.num_output, -1)
        self._w8, self._weight = quantized_weights(rows, self._int8.weight)

    def _forward_int8(self, bottom, top, opt, w8: np.ndarray, bias) -> int:
        assert self._int8 is not None  # load_model read the scales
        num_input = w8.shape[1]
        if bottom.elempack != 1 or bottom.dims == 0 or bottom.elemsize not in (1, 4):
            log.error("InnerProduct %r: int8 forward needs an fp32 or int8 blob with elempack 1", self.name)
            return -1
        x = bottom.tensor()
        if x.dtype != np.int8:
            x = float2int8(np.multiply(x, self._int8.bottom, dtype=np.float32))
        if bottom.dims == 2 and x.shape[1] == num_input:
            acc = int8_matmul(x, w8.T)  # (rows, num_output)
            axis = 1
        elif x.size != num_input:
            log.error(
                "InnerProduct %r: input of %d values (shape %s), weights expect %d",
                self.name, x.size, x.shape, num_input,
            )  # fmt: skip
            return -1
        else:
            acc = int8_matmul(w8, x.reshape(num_input, 1))[:, 0]
            axis = 0
        v = self._int8.dequantize(acc, bias, self.activation_type, self.activation_params, axis)
        top.create(*reversed(v.shape), elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        top.tensor()[...] = v
        return 0

    def forward(self, bottom, top, opt) -> int:
        # one read under the weights' lock (WeightBias._derived): a park on another thread
        # takes nothing from this forward
        weight, bias, w8 = self._derived("_weight", "_bias", "_w8")
        if self.int8_scale_term and opt.use_int8_inference:
            return self._forward_int8(bottom, top, opt, w8, bias)
        if bottom.elemsize == 1 and bottom.elempack == 1:
            # 8-bit data (a uint8/int8 array fed as it is) is read by value, as on the GPU path
            bottom = Mat.from_tensor(bottom.tensor().astype(np.float32))
        num_input = weight.shape[1]
        if bottom.elempack != 1 or bottom.dims == 0:
            log.error("InnerProduct %r: needs an fp32 blob with elempack 1", self.name)
            return -1
        x = bottom.tensor()
        if bottom.dims == 2 and x.shape[1] == num_input:
            top.create(self.num_output, x.shape[0], elemsize=4, elempack=1, allocator=opt.blob_allocator)
            if top.empty():
                return -100
            # x @ W^T: BLAS reads the transposed weights in place, no copy
            out = np.matmul(x, weight.T, out=top.tensor())
        else:
            if x.size != num_input:
                log.error(
                    "InnerProduct %r: input of %d values (shape %s), weights expect %d",
                    self.name,
                    x.size,
                    x.shape,
                    num_input,
                )
                return -1
            top.create(self.num_output, elemsize=4, elempack=1, allocator=opt.blob_allocator)
            if top.empty():
                return -100
            out = np.matmul(weight, x.reshape(num_input), out=top.tensor())
        if bias is not None:
            out += bias
        fused_activation(out, self.activation_type, self.activation_params)
        return 0
