"""Convolution on the GPU: register-tiled direct convolution with in-shader padding and fused activation.

Pads (including SAME -233/-234, resolved from the input size at forward time) never
materialise a bordered copy: the shader reads pad_value for taps outside the input.
A 1x1 stride-1 unpadded convolution uses the shader's flat variant.

Each invocation computes T output positions x 4*G output channels (``tile_w`` and
``out_groups``, chosen per device type in ``_tile_shape``), so the weights are uploaded as [outc/(4G)][c][kh*kw][G][4]
(one vec4 load per tap gives 4 output channels) and the bias as [outc/(4G)][G][4], both
zero-filled past num_output.
Weights that fp16 holds exactly (a model stored as fp16) are uploaded as halves: half
the weight loads, bit-identical results.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..convolution import PAD_SAME_LOWER, PAD_SAME_UPPER, Convolution
from . import LOCAL_1D, VulkanLayer

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")

# how many entries of activation_params (param 10) each activation_type reads
_ACT_PARAM_COUNT = {2: 1, 3: 2, 6: 2}


class Convolution_vulkan(VulkanLayer, Convolution):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False
        self.pipeline_convolution = None
        self.weight_data_gpu: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None
        self._flat = False
        self._out_groups = 2
        self._tile_w = 8
        self._weight_fp16 = False

    def _pads(self, h: int, w: int) -> tuple[int, int, int, int]:
        """(top, bottom, left, right) the CPU layer would pad (negative crops) for this input."""
        pads = (self.pad_left, self.pad_right, self.pad_top, self.pad_bottom)
        if any(p > 0 for p in pads):
            return self.pad_top, self.pad_bottom, self.pad_left, self.pad_right
        if all(p == PAD_SAME_UPPER for p in pads) or all(p == PAD_SAME_LOWER for p in pads):
            return self.same_border(h, w)
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
            geometry = [1, 1, 1, 1, 1, 1]
        else:
            geometry = [
                self.kernel_w,
                self.kernel_h,
                self.dilation_w,
                self.dilation_h,
                self.stride_w,
                self.stride_h,
            ]
        self._tile_w, self._out_groups = self._tile_shape()
        specs = geometry + [1 if self.bias_term else 0, self.activation_type, *act, int(self._flat)]
        self._weight_fp16 = self._weights_fit_fp16()
        specs += [self._out_groups, int(self._weight_fp16), self._tile_w]
        if self._cpu_device() and opt.use_fp16_arithmetic:
            # llvmpipe emulates half arithmetic: fp32 accumulation is faster there (SqueezeNet
            # on lavapipe: 375 ms with fp16 arithmetic, 285 ms without) and more accurate
            opt = opt.copy()
            opt.use_fp16_arithmetic = False
        self.pipeline_convolution = self.new_pipeline("convolution", opt, specs, LOCAL_1D)
        return 0 if self.pipeline_convolution else -1

    def _cpu_device(self) -> bool:
        assert self.vkdev is not None  # create_pipeline_vk runs only with a device
        return int(getattr(self.vkdev.info, "type", 0)) == 3  # VK_PHYSICAL_DEVICE_TYPE_CPU

    def _tile_shape(self) -> tuple[int, int]:
        """(tile_w, out_groups) for this device.

        A CPU device (lavapipe) is bound by loads, so big register tiles win there (measured:
        16 x 16 for 1x1 kernels, 8 x 8 otherwise; larger ones overflow the registers). A GPU
        wants many light invocations instead: on an H200 those big tiles made SqueezeNet 2.3x
        slower and its pipelines 3x slower to build, so GPUs get the smallest tile the shader
        allows (4 positions x 8 channels: steady 5.3 ms instead of 10.3, cold load_model
        0.52 s instead of 0.86 s)."""
        assert self.vkdev is not None  # create_pipeline_vk runs only with a device
        if int(getattr(self.vkdev.info, "type", 0)) == 3:  # VK_PHYSICAL_DEVICE_TYPE_CPU
            return (16, 4) if self.kernel_w * self.kernel_h == 1 else (8, 2)
        return 4, 2

    def _weights_fit_fp16(self) -> bool:
        """Whether every weight converts to fp16 and back unchanged (NaN and overflow never do)."""
        if self._weight2d is None:
            return False
        with np.errstate(over="ignore", invalid="ignore"):
            return bool(np.array_equal(self._weight2d.astype(np.float16).astype(np.float32), self._weight2d))

    def upload_model(self, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat
        from ...mat import Mat

        assert self._weight2d is not None  # load_model() prepared it
        g = self._out_groups
        groups = -(-self.num_output // (4 * g))
        weight = np.zeros((groups * 4 * g, self._weight2d.shape[1]), np.float32)
        weight[: self.num_output] = self._weight2d
        # [groups][g][4][c*maxk] -> [groups][c*maxk][g][4]
        weight = np.ascontiguousarray(weight.reshape(groups, g, 4, -1).transpose(0, 3, 1, 2)).reshape(-1)
        if self._weight_fp16:
            # pairs of halves in 32-bit words, the first in the low half (unpackHalf2x16)
            weight = weight.astype(np.float16).view(np.float32)
        self.weight_data_gpu = VkMat()
        cmd.record_upload(Mat(weight), self.weight_data_gpu, opt)
        if self.bias_term:
            assert self._bias is not None  # load_model() prepared it
            bias = np.zeros(groups * 4 * g, np.float32)
            bias[: self.num_output] = self._bias.reshape(-1)
            self.bias_data_gpu = VkMat()
            cmd.record_upload(Mat(bias), self.bias_data_gpu, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if not self.accepts_3d(bottom) or not self.accepts_vec4_channels(bottom):
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
        tiles = -(-outw * outh // self._tile_w) if self._flat else -(-outw // self._tile_w) * outh
        grid = (tiles, -(-self.num_output // (4 * self._out_groups)), 1)
        cmd.record_pipeline(
            self.pipeline_convolution, [bottom, top, self.weight_data_gpu, bias], constants, grid
        )
        return 0
