"""Requantize on the GPU: ``float2int8(activation(x * scale_in + bias) * scale_out)`` of an
int32 blob, per blob, row or channel, written as the int8 values widened into fp32
(dequantize.comp with requantize on; see _int8.py for the GPU form of int8 blobs)."""

from __future__ import annotations

from ..requantize import Requantize
from ._int8 import DequantizeGpu


class Requantize_vulkan(DequantizeGpu, Requantize):
    VECTORS = (
        ("scale_in_data", "scale_in_data"),
        ("bias_data", "bias_data"),
        ("scale_out_data", "scale_out_data"),
    )
    REQUANTIZE = 1
