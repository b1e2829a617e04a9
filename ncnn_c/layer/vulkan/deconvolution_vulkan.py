"""Deconvolution on the GPU: a gather-form transposed convolution with crop and activation fused.

One dispatch of deconvolution.comp computes the cropped output directly (each output
position gathers the input pixels whose kernel taps land on it), so no full-size
intermediate is made; the crop and output size come from the CPU class's
``deconv_geometry`` (pads, output_pad, output_w/output_h with SAME pads). The same shader
serves DeconvolutionDepthWise (deconvolutiondepthwise_vulkan.py) through its group count.
Blobs are elempack 1 (support_packing off: the net unpacks first), fp16 storage allowed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..deconvolution import Deconvolution, flat_weights
from . import LOCAL_1D, VulkanLayer
from .convolution_vulkan import _ACT_PARAM_COUNT

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class Deconvolution_vulkan(VulkanLayer, Deconvolution):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = False
        self.pipeline_deconvolution = None
        self.weight_data_gpu: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None

    def check_params(self) -> int:
        ret = super().check_params()
        if ret == 0 and self.dynamic_weight:
            # weights arriving as a blob are handled on the CPU
            self.support_vulkan = False
        return ret

    def create_pipeline_vk(self, opt) -> int:
        act = [float(v) for v in self.activation_params[: _ACT_PARAM_COUNT.get(self.activation_type, 0)]]
        act += [0.0] * (2 - len(act))
        specs = [
            self.kernel_w,
            self.kernel_h,
            self.dilation_w,
            self.dilation_h,
            self.stride_w,
            self.stride_h,
            1 if self.bias_term else 0,
            self.activation_type,
            *act,
        ]
        self.pipeline_deconvolution = self.new_pipeline("deconvolution", opt, specs, LOCAL_1D)
        return 0 if self.pipeline_deconvolution else -1

    def _inc_g(self) -> int:
        return self.weight_data_size // (self.kernel_w * self.kernel_h * self.num_output)

    def upload_model(self, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat
        from ...mat import Mat

        g = self.group
        outc_g = self.num_output // g
        vec4s = -(-outc_g // 4)
        maxk = self.kernel_w * self.kernel_h
        # stored [group][outc_g][inc_g][maxk] -> [group][vec4s][inc_g][maxk][4], zero past outc_g
        weight = np.zeros((g, vec4s * 4, self._inc_g(), maxk), np.float32)
        weight[:, :outc_g] = flat_weights(self.weight_data).reshape(g, outc_g, -1, maxk)
        weight = weight.reshape(g, vec4s, 4, -1, maxk).transpose(0, 1, 3, 4, 2)
        self.weight_data_gpu = VkMat()
        cmd.record_upload(Mat(np.ascontiguousarray(weight).reshape(-1)), self.weight_data_gpu, opt)
        if self.bias_term:
            bias = np.zeros((g, vec4s * 4), np.float32)
            bias[:, :outc_g] = flat_weights(self.bias_data).reshape(g, outc_g)
            self.bias_data_gpu = VkMat()
            cmd.record_upload(Mat(bias.reshape(-1)), self.bias_data_gpu, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if not self.accepts_3d(bottom):
            return -1
        inc = self._inc_g() * self.group
        if bottom.c != inc:
            log.error("%s %r: %d input channels, weights expect %d", self.type, self.name, bottom.c, inc)
            return -1
        geom = self.deconv_geometry(bottom.w, bottom.h, self.kernel_w, self.kernel_h)
        if geom is None:
            return -1
        full_w, full_h, (t, b, l, r) = geom
        outw, outh = full_w - l - r, full_h - t - b
        top.create(
            outw, outh, self.num_output, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator
        )
        if top.empty():
            return -100
        outc_g = self.num_output // self.group
        constants = [bottom.w, bottom.h, bottom.c, bottom.cstep, outw, outh, self.num_output, top.cstep]
        constants += [l, t, inc // self.group, outc_g]
        bias = self.bias_data_gpu if self.bias_term else self.weight_data_gpu
        grid = (outw * outh, -(-outc_g // 4), self.group)
        cmd.record_pipeline(
            self.pipeline_deconvolution, [bottom, top, self.weight_data_gpu, bias], constants, grid
        )
        return 0
