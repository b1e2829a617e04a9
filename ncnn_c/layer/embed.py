"""Embed: look up one row of a (input_dim, num_output) table per token; a 2-D blob of
(words, num_output), plus ``bias`` (num_output values) with ``bias_term``.

Params: 0 num_output, 1 input_dim, 2 bias_term, 3 weight_data_size, 18 int8_scale_term.
Weights: the table (``weight_data_size`` values, a flagged blob), then the bias (raw fp32),
then with ``int8_scale_term`` one raw fp32 scale; an int8 table is dequantised as
``q * (1 / scale)``, in ncnn's order.

Tokens are read as ncnn reads them: the input's 32-bit words as int32 (write token ids into
an int32 Mat, or an fp32 one holding their bit patterns), clamped to [0, input_dim). Only a
1-D blob (or one whose other axes are 1) is accepted: ncnn reads the first w words of any.
"""

from __future__ import annotations

import logging

import numpy as np

from . import Layer, Param, load_weight, weight_error
from ._elementwise import load_vector

log = logging.getLogger("ncnn_c")


class Embed(Layer):
    PARAMS = (
        Param(0, "num_output", 0),
        Param(1, "input_dim", 0),
        Param(2, "bias_term", 0),
        Param(3, "weight_data_size", 0),
        Param(18, "int8_scale_term", 0),
    )
    num_output: int
    input_dim: int
    bias_term: int
    weight_data_size: int
    int8_scale_term: int

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self.weight_data = np.zeros((0, 0), np.float32)
        self.bias_data: np.ndarray | None = None

    def check_params(self) -> int:
        for key in ("num_output", "input_dim"):
            if getattr(self, key) < 1:
                log.error("Embed %r: %s %d must be >= 1", self.name, key, getattr(self, key))
                return -1
        need = self.num_output * self.input_dim
        if self.weight_data_size < need:
            log.error(
                "Embed %r: weight_data_size %d is less than num_output * input_dim = %d",
                self.name, self.weight_data_size, need,
            )  # fmt: skip
            return -1
        return 0

    def load_model(self, mb) -> int:
        m = load_weight(self, mb, "weight_data", self.weight_data_size, 0)
        if m.empty():
            return -100
        table = m.tensor().reshape(-1)[: self.num_output * self.input_dim]
        if self.int8_scale_term and m.elemsize != 1:
            # ncnn would read the fp32 bytes as int8
            weight_error(self, mb, "int8_scale_term (param 18) needs int8-stored weight_data, got fp32")
            return -100
        if not self.int8_scale_term and m.elemsize != 4:
            weight_error(self, mb, f"weight_data of elemsize {m.elemsize} without int8_scale_term (param 18)")
            return -100
        self.bias_data = None
        if self.bias_term:
            self.bias_data = load_vector(self, mb, self.num_output, "bias")
            if self.bias_data is None:
                return -100
        if self.int8_scale_term:
            scale = load_vector(self, mb, 1, "weight_data_int8_scale")
            if scale is None:
                return -100
            descale = np.float32(1.0) / scale[0]
            table = table.astype(np.float32) * descale
        self.weight_data = np.array(table, dtype=np.float32).reshape(self.input_dim, self.num_output)
        return 0

    def forward(self, bottom, top, opt) -> int:
        if (
            bottom.dims < 1
            or bottom.elemsize != 4
            or bottom.elempack != 1
            or bottom.h * bottom.d * bottom.c != 1
        ):
            log.error(
                "Embed %r: needs a 1-D blob of 32-bit token ids, got dims %d (w %d h %d d %d c %d)",
                self.name, bottom.dims, bottom.w, bottom.h, bottom.d, bottom.c,
            )  # fmt: skip
            return -1
        tokens = np.clip(bottom.tensor(np.int32).reshape(-1), 0, self.input_dim - 1)
        top.create(self.num_output, tokens.size, elemsize=4, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        out = top.tensor()
        np.take(self.weight_data, tokens, axis=0, out=out)
        if self.bias_data is not None:
            out += self.bias_data
        return 0
