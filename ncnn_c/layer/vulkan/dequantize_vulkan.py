"""Dequantize on the GPU: ``x * scale + bias`` (one fused multiply-add) of an int32 blob,
per blob, row or channel, into fp32 (dequantize.comp; see _int8.DequantizeGpu)."""

from __future__ import annotations

from ..dequantize import Dequantize
from ._int8 import DequantizeGpu


class Dequantize_vulkan(DequantizeGpu, Dequantize):
    VECTORS = (("scale_data", "scale_data"), ("bias_data", "bias_data"))
