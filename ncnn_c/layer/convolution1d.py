"""Convolution1D: convolution along w of a 2-D blob (h = channels, w = length).

The same kernels as Convolution on a (channels, 1, length) view: im2col + one matrix product
straight into the (num_output, outw) top. Its one spatial axis is w (``AXES``): padding is
left/right only (15 defaults to 4); SAME (-233 upper / -234 lower) pads only when the total
comes out positive, as ncnn does (_geometry.py).
"""

from __future__ import annotations

import logging

from . import Param
from ._geometry import copy_make_border
from .convolution import Convolution

log = logging.getLogger("ncnn_c")


class Convolution1D(Convolution):
    AXES = "w"
    PARAMS = (
        Param(0, "num_output", 0),
        Param(1, "kernel_w", 0),
        Param(2, "dilation_w", 1),
        Param(3, "stride_w", 1),
        Param(4, "pad_left", 0),
        Param(5, "bias_term", 0),
        Param(6, "weight_data_size", 0),
        Param(9, "activation_type", 0),
        Param(10, "activation_params", kind="floats"),
        Param(15, "pad_right", "pad_left"),
        Param(18, "pad_value", 0.0),
        Param(19, "dynamic_weight", 0),
    )

    def __init__(self) -> None:
        # the 2-D kernels see a kernel of height 1 that never pads vertically
        self.kernel_h = self.dilation_h = self.stride_h = 1
        self.pad_top = self.pad_bottom = 0
        self.int8_scale_term = 0
        super().__init__()

    def _winograd_fits(self, kw: int, kh: int, inc: int, outc: int) -> bool:
        return False

    def forward(self, bottom, top, opt) -> int:
        dynamic = isinstance(bottom, list)
        if dynamic:
            got = self._dynamic_weights(bottom, 3)
            if got is None:
                return -1
            weight2d, bias, kw, _ = got
            bottom, top = bottom[0], top[0]
        else:
            weight2d, bias = self._derived("_weight2d", "_bias")  # one read (WeightBias)
            kw = self.kernel_w
        if bottom.elempack != 1 or bottom.dims != 2:
            log.error(
                "Convolution1D %r: needs a 2-D fp32 blob with elempack 1, got dims %d elempack %d",
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        x = bottom.tensor()
        expect = weight2d.shape[1] // kw
        if x.shape[0] != expect:
            log.error("Convolution1D %r: %d input channels, weights expect %d", self.name, x.shape[0], expect)
            return -1
        l, r = self.pads(x.shape[1:], (kw,))
        out = self.output_shape(x.shape[1:], (l, r), (kw,))
        if out is None:
            return -1
        dst = self._create_top(out, top, opt, weight2d.shape[0])
        if dst is None:
            return -100
        keep, xp = copy_make_border(x[:, None, :], 0, 0, l, r, self.pad_value, opt)
        self._compute(xp, (0, 0, 0, 0), dst, opt, weight2d, bias, kw, 1, False)
        del keep
        return 0
