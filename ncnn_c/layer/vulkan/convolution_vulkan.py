"""Convolution on the GPU: direct convolution with in-shader padding and fused activation.

Pads (including SAME -233/-234, resolved from the input size at forward time) never
materialise a bordered copy: the shader reads pad_value for taps outside the input.
A 1x1 stride-1 unpadded convolution uses the shader's flat variant.
"""

from __future__ import annotations

import logging

from ..convolution import PAD_SAME_LOWER, PAD_SAME_UPPER, Convolution, same_pads
from . import LOCAL_1D, LOCAL_2D, VulkanLayer

log = logging.getLogger("ncnn_c")

# how many entries of activation_params (param 10) each activation_type reads
_ACT_PARAM_COUNT = {2: 1, 3: 2, 6: 2}


class Convolution_vulkan(VulkanLayer, Convolution):
    def __init__(self) -> None:
        super().__init__()
        self.pipeline_convolution = None
        self.weight_data_gpu = None
        self.bias_data_gpu = None
        self._flat = False

    def _pads(self, h: int, w: int) -> tuple[int, int, int, int]:
        """(top, bottom, left, right) the CPU layer would pad (negative crops) for this input."""
        pads = (self.pad_left, self.pad_right, self.pad_top, self.pad_bottom)
        if any(p > 0 for p in pads):
            return self.pad_top, self.pad_bottom, self.pad_left, self.pad_right
        if all(p == PAD_SAME_UPPER for p in pads) or all(p == PAD_SAME_LOWER for p in pads):
            upper = pads[0] == PAD_SAME_UPPER
            l, r = same_pads(w, self.dilation_w * (self.kernel_w - 1) + 1, self.stride_w, upper)
            t, b = same_pads(h, self.dilation_h * (self.kernel_h - 1) + 1, self.stride_h, upper)
            if l > 0 or r > 0 or t > 0 or b > 0:
                return t, b, l, r
        return 0, 0, 0, 0

    def _is_flat_1x1(self) -> bool:
        # SAME pads of a 1x1 stride-1 kernel are always zero
        return (
            self.kernel_w == self.kernel_h == 1
            and self.stride_w == self.stride_h == 1
            and not any(p > 0 for p in (self.pad_left, self.pad_right, self.pad_top, self.pad_bottom))
        )

    def create_pipeline_vk(self, opt) -> int:
        act = [float(v) for v in self._act[: _ACT_PARAM_COUNT.get(self.activation_type, 0)]]
        act += [0.0] * (2 - len(act))
        # unused params are normalised so that equivalent layers share one cached pipeline
        self._flat = self._is_flat_1x1()
        if self._flat:
            geometry, local = [1, 1, 1, 1, 1, 1], LOCAL_1D
        else:
            geometry = [
                self.kernel_w,
                self.kernel_h,
                self.dilation_w,
                self.dilation_h,
                self.stride_w,
                self.stride_h,
            ]
            local = LOCAL_2D
        specs = geometry + [1 if self.bias_term else 0, self.activation_type, *act, int(self._flat)]
        self.pipeline_convolution = self.new_pipeline("convolution", opt, specs, local)
        return 0 if self.pipeline_convolution else -1

    def upload_model(self, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat

        self.weight_data_gpu = VkMat()
        cmd.record_upload(self.weight_data, self.weight_data_gpu, opt)
        if self.bias_term:
            self.bias_data_gpu = VkMat()
            cmd.record_upload(self.bias_data, self.bias_data_gpu, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if not self.accepts_3d(bottom):
            return -1
        w, h, channels = bottom.w, bottom.h, bottom.c
        maxk = self.kernel_w * self.kernel_h
        if channels * maxk * self.num_output != self.weight_data_size:
            log.error(
                "Convolution %r: %d input channels, weights expect %d",
                self.name,
                channels,
                self.weight_data_size // (maxk * self.num_output),
            )
            return -1
        t, b, l, r = self._pads(h, w)
        outw = (w + l + r - (self.dilation_w * (self.kernel_w - 1) + 1)) // self.stride_w + 1
        outh = (h + t + b - (self.dilation_h * (self.kernel_h - 1) + 1)) // self.stride_h + 1
        if outw <= 0 or outh <= 0:
            log.error(
                "Convolution %r: input %dx%d (padded) is smaller than the kernel",
                self.name,
                w + l + r,
                h + t + b,
            )
            return -1

        top.create(
            outw, outh, self.num_output, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator
        )
        if top.empty():
            return -100
        bias = self.bias_data_gpu if self.bias_term else self.weight_data_gpu
        # the shader's push constant block, in order
        constants = [w, h, channels, bottom.cstep, outw, outh, self.num_output, top.cstep]
        constants += [l, t, float(self.pad_value)]
        grid = (outw * outh, 1, self.num_output) if self._flat else (outw, outh, self.num_output)
        cmd.record_pipeline(
            self.pipeline_convolution, [bottom, top, self.weight_data_gpu, bias], constants, grid
        )
        return 0
