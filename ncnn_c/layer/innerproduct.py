"""InnerProduct (fully connected, fp32): one BLAS product on weights prepared at load time.

As in ncnn, a 2-D input whose rows have ``num_input`` values is a batch of rows (one GEMM
giving a (rows, num_output) blob); any other input (1-D, 2-D, 3-D or 4-D) is flattened to
one vector of ``num_input`` values giving a 1-D blob of ``num_output`` values.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from . import Param
from ._fused_activation import check_activation, fused_activation
from ._geometry import WeightBias
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

    def check_params(self) -> int:
        if self.int8_scale_term:
            log.error(
                "InnerProduct %r: int8 quantized weights (8=%d) are not supported",
                self.name,
                self.int8_scale_term,
            )
            return -1
        if self.num_output <= 0 or self.weight_data_size <= 0 or self.weight_data_size % self.num_output:
            log.error(
                "InnerProduct %r: weight_data_size %d is not a multiple of num_output %d",
                self.name,
                self.weight_data_size,
                self.num_output,
            )
            return -1
        return check_activation(self)

    def _prepare(self) -> None:
        self._weight = flat_weights(self.weight_data).reshape(self.num_output, -1)
        self._bias = flat_weights(self.bias_data) if self.bias_term else None

    def forward(self, bottom, top, opt) -> int:
        if self._weight is None:
            self._prepare()
        weight = self._weight
        assert weight is not None  # set by _prepare()
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
        if self._bias is not None:
            out += self._bias
        fused_activation(out, self.activation_type, self.activation_params)
        return 0
