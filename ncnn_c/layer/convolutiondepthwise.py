"""ConvolutionDepthWise: grouped 2-D convolution (param 7 = group).

group == channels == num_output is depthwise (one kernel per channel, a native one-pass loop
or shifted numpy views); 1 < group < channels is a grouped convolution computed as one
batched matmul over the groups; group 1 is a plain convolution. Padding, bias, fused
activation and dynamic weights work as in Convolution.

int8 as in Convolution, with ncnn's two scale layouts: int8_scale_term 1 / 101 store one
weight scale per group, 2 / 102 a single one for every group; every group shares the bottom
(and, > 100, the top) scale. Other values are refused (ncnn would load no scales).
"""

from __future__ import annotations

import logging

import numpy as np

from . import Param
from ._conv import bias_act, depthwise_into, gemm_into, grouped_into, native_act, native_kernels
from ._fused_activation import fused_activation
from ._geometry import copy_make_border
from .convolution import Convolution

log = logging.getLogger("ncnn_c")


class ConvolutionDepthWise(Convolution):
    PARAMS = Convolution.PARAMS[:6] + (Param(7, "group", 1),) + Convolution.PARAMS[6:]
    DERIVED = (*Convolution.DERIVED, "_weight3d")

    def __init__(self) -> None:
        super().__init__()
        self._weight3d: np.ndarray | None = None

    def group_count(self) -> int:
        return self.group

    def check_params(self) -> int:
        if self.int8_scale_term not in (0, 1, 2, 101, 102):
            log.error(
                "ConvolutionDepthWise %r: int8_scale_term %d is not 1, 2, 101 or 102",
                self.name,
                self.int8_scale_term,
            )
            return -1
        if self.group <= 0:
            log.error("ConvolutionDepthWise %r: group must be positive, got %d", self.name, self.group)
            return -1
        if self.num_output % self.group:
            log.error(
                "ConvolutionDepthWise %r: num_output %d is not a multiple of group %d",
                self.name,
                self.num_output,
                self.group,
            )
            return -1
        return super().check_params()

    def weight_scale_count(self) -> int:
        return self.group if self.int8_scale_term in (1, 101) else 1

    def row_weight_scales(self, stored: np.ndarray) -> np.ndarray:
        per_group = np.broadcast_to(stored, (self.group,))
        return np.repeat(per_group, self.num_output // self.group).astype(np.float32)

    def _prepare(self) -> None:
        super()._prepare()
        assert self._weight2d is not None
        # weights are [group][num_output/group][num_input/group][kh][kw]: rows of the product
        # per group (a depthwise layer has one row of kh*kw per channel, the same reshape)
        self._weight3d = self._weight2d.reshape(self.group, self.num_output // self.group, -1)

    def _winograd_fits(self, kw: int, kh: int, inc: int, outc: int) -> bool:
        return False

    def _forward_dynamic(self, bottoms, tops, opt) -> int:
        got = self._dynamic_weights(bottoms, 4)
        if got is None:
            return -1
        weight2d, bias, kw, kh = got
        outc = weight2d.shape[0]
        if outc % self.group:
            log.error(
                "ConvolutionDepthWise %r: dynamic weight has %d outputs for group %d",
                self.name,
                outc,
                self.group,
            )
            return -1
        return self._forward_3d(bottoms[0], tops[0], opt, weight2d, bias, kw, kh)

    def _compute(self, x, pads, dst, opt, weight2d, bias, kw, kh, wino) -> None:
        g = self.group
        outc = dst.shape[0]
        c = x.shape[0]
        geom = (kw, kh, self.stride_w, self.stride_h, self.dilation_w, self.dilation_h)
        keep = None
        if g == c and g == outc:
            # the native kernel borders each channel on the fly; the numpy one needs a copy
            if min(pads) < 0 or native_kernels() is None:
                keep, x = copy_make_border(x, pads[0], pads[1], pads[2], pads[3], self.pad_value, opt)
                pads = (0, 0, 0, 0)
            act = native_act(self.activation_type, self._act)
            done = depthwise_into(x, dst, weight2d, bias, act, geom, opt, pads, self.pad_value)
            del keep
            if done:
                return
            bias = None  # added by depthwise_into
        else:
            keep, xp = copy_make_border(x, pads[0], pads[1], pads[2], pads[3], self.pad_value, opt)
            if g == 1:
                gemm_into(xp, dst, weight2d, *geom, opt)
            else:
                grouped_into(xp, dst, weight2d.reshape(g, outc // g, -1), *geom, opt)
            del keep
            if bias_act(dst, bias, self.activation_type, opt, self._act):
                return
        if bias is not None:
            dst += bias.reshape(-1, 1, 1)
        fused_activation(dst, self.activation_type, self._act)
