"""Scale: y = x * scale[channel] (+ bias[channel] with param 1 bias_term), in place.

Param 0 scale_data_size is the number of per-channel scales stored as weights (raw fp32,
then as many biases when bias_term). The special size -233 takes the scales from a second
input blob instead (y = x0 * x1), making the layer two-input. The channel axis is ncnn's:
elements of a 1-D blob, rows of a 2-D one, channels of 3-D / 4-D.

ncnn reads the scale blob as raw memory, so a 3-D scale blob with channel padding would give
it padding bytes; we read its values in order (what the flat index means for unpadded blobs).
"""

from __future__ import annotations

import logging

import numpy as np

from . import Param, param_error
from ._elementwise import Elementwise, load_vector, per_axis0

log = logging.getLogger("ncnn_c")

SCALE_FROM_BLOB = -233


class Scale(Elementwise):
    PARAMS = (Param(0, "scale_data_size", 0), Param(1, "bias_term", 0))
    per_channel = True

    def __init__(self) -> None:
        super().__init__()
        self.scale_data = np.zeros(0, np.float32)
        self.bias_data = np.zeros(0, np.float32)

    def check_params(self) -> int:
        self.one_blob_only = self.scale_data_size != SCALE_FROM_BLOB
        if not self.one_blob_only and self.bias_term:
            # ncnn loads no bias in this form, yet would read one
            log.error("Scale %r: bias_term with scales from a second blob has no bias to add", self.name)
            return -1
        if self.one_blob_only and self.scale_data_size < 1:
            return param_error(
                self, "scale_data_size", "must be positive (or -233: scales from a second blob)"
            )
        return 0

    def load_model(self, mb) -> int:
        if not self.one_blob_only:
            return 0
        scale = load_vector(self, mb, self.scale_data_size, "scale")
        if scale is None:
            return -100
        self.scale_data = scale
        if self.bias_term:
            bias = load_vector(self, mb, self.scale_data_size, "bias")
            if bias is None:
                return -100
            self.bias_data = bias
        return 0

    def _coeffs(self, m, scale: np.ndarray):
        s = per_axis0(self, m, scale, "scales")
        if s is None:
            return None
        return (s, self.bias_data[: len(s)]) if self.bias_term else (s,)

    def channel_coeffs(self, m):
        return self._coeffs(m, self.scale_data)

    def apply(self, x, out, scale, bias=None) -> int:
        np.multiply(x, scale, out=out)
        if bias is not None:
            out += bias
        return 0

    # -- the two-input form: bottoms[1] holds the scales ------------------------------------
    def _blob_scales(self, bottoms):
        if len(bottoms) != 2:
            log.error("Scale %r: scales from a blob need 2 inputs, got %d", self.name, len(bottoms))
            return None
        return self._coeffs(bottoms[0], bottoms[1].tensor().ravel())

    def forward(self, bottom, top, opt) -> int:
        if not isinstance(bottom, list):
            return super().forward(bottom, top, opt)
        coeffs = self._blob_scales(bottom)
        return -1 if coeffs is None else self.forward_with(bottom[0], top[0], opt, coeffs)

    def forward_inplace(self, bottom_top, opt) -> int:
        if not isinstance(bottom_top, list):
            return super().forward_inplace(bottom_top, opt)
        coeffs = self._blob_scales(bottom_top)
        return -1 if coeffs is None else self.forward_inplace_with(bottom_top[0], coeffs)
