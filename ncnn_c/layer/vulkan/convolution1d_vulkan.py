"""Convolution1D on the GPU: the grouped-convolution shader with one group and one row.

A 2-D blob (h = channels, w = length) is a stack of rows w elements apart, which is what
convolutiondepthwise_group.comp reads when it is told h = 1 and cstep = w; one group holds
every channel, so one dispatch computes a row tile x 4 output channels per invocation with
the left/right pads (SAME included, from the CPU class's ``lr_pads``) virtual and the bias
and activation fused. Blobs are elempack 1 (the net unpacks first), fp16 storage allowed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..convolution1d import Convolution1D
from . import LOCAL_1D, VulkanLayer
from .convolution_vulkan import _ACT_PARAM_COUNT

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class Convolution1D_vulkan(VulkanLayer, Convolution1D):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False
        self.pipeline_convolution1d = None
        self.weight_data_gpu: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None
        self._tile_w = 8

    def check_params(self) -> int:
        ret = super().check_params()
        if ret == 0 and self.dynamic_weight:
            # weights arriving as a blob are handled on the CPU
            self.support_vulkan = False
        return ret

    def create_pipeline_vk(self, opt) -> int:
        act = [float(v) for v in self._act[: _ACT_PARAM_COUNT.get(self.activation_type, 0)]]
        act += [0.0] * (2 - len(act))
        assert self.vkdev is not None  # create_pipeline_vk runs only with a device
        # a CPU device (lavapipe) is bound by loads: longer row tiles reuse each loaded row more
        self._tile_w = 8 if int(getattr(self.vkdev.info, "type", 0)) == 3 else 4
        specs = [self.kernel_w, 1, self.dilation_w, 1, self.stride_w, 1, 1 if self.bias_term else 0]
        specs += [self.activation_type, *act, self._tile_w]
        self.pipeline_convolution1d = self.new_pipeline("convolutiondepthwise_group", opt, specs, LOCAL_1D)
        return 0 if self.pipeline_convolution1d else -1

    def upload_model(self, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat
        from ...mat import Mat

        assert self._weight2d is not None  # load_model() prepared it
        vec4s = -(-self.num_output // 4)
        # [outc][inc * kw] -> [vec4s][inc * kw][4], zero past outc
        weight = np.zeros((vec4s * 4, self._weight2d.shape[1]), np.float32)
        weight[: self.num_output] = self._weight2d
        weight = np.ascontiguousarray(weight.reshape(vec4s, 4, -1).transpose(0, 2, 1)).reshape(-1)
        self.weight_data_gpu = VkMat()
        cmd.record_upload(Mat(weight), self.weight_data_gpu, opt)
        if self.bias_term:
            assert self._bias is not None  # load_model() prepared it
            bias = np.zeros(vec4s * 4, np.float32)
            bias[: self.num_output] = self._bias.reshape(-1)
            self.bias_data_gpu = VkMat()
            cmd.record_upload(Mat(bias), self.bias_data_gpu, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims != 2 or bottom.elempack != 1:
            log.error(
                "Convolution1D %r: needs a 2-D elempack 1 blob, got dims %d elempack %d",
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        w, channels = bottom.w, bottom.h
        if channels != self.num_input():
            log.error(
                "Convolution1D %r: %d input channels, weights expect %d",
                self.name,
                channels,
                self.num_input(),
            )
            return -1
        l, r = self.lr_pads(w, self.kernel_w)
        outw = (w + l + r - (self.dilation_w * (self.kernel_w - 1) + 1)) // self.stride_w + 1
        if outw <= 0:
            log.error(
                "Convolution1D %r: input width %d (padded) is smaller than the kernel", self.name, w + l + r
            )
            return -1
        top.create(
            outw, self.num_output, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator
        )
        if top.empty():
            return -100
        # rows are w (and outw) elements apart: they are the shader's channels
        constants = [w, 1, channels, w, outw, 1, self.num_output, outw, l, 0, float(self.pad_value)]
        constants += [channels, self.num_output]
        bias = self.bias_data_gpu if self.bias_term else self.weight_data_gpu
        grid = (-(-outw // self._tile_w), -(-self.num_output // 4), 1)
        cmd.record_pipeline(
            self.pipeline_convolution1d, [bottom, top, self.weight_data_gpu, bias], constants, grid
        )
        return 0
