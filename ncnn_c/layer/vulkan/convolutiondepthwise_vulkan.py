"""ConvolutionDepthWise on the GPU: depthwise (elempack 1 and 4) and grouped convolution.

A depthwise layer (group == channels == num_output) keeps its bottom's packing: one
invocation computes a row tile of one channel (convolutiondepthwise.comp) or of one packed
channel (convolutiondepthwise_pack4.comp). Any other grouping (several channels per group,
or a channel multiplier) runs convolutiondepthwise_group.comp on elempack 1 blobs, a row
tile x 4 output channels of one group per invocation; a packed bottom is unpacked first by
the net's shared layout pipeline. Padding (SAME included, from the GPU Convolution's
``pads``) is virtual, and the bias and fused activation are applied in the same dispatch.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from .._fused_activation import activation_specs
from ..convolutiondepthwise import ConvolutionDepthWise
from . import LOCAL_1D, LOCAL_2D, VulkanLayer, elemsize_for, is_fp16, upload_weights

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class ConvolutionDepthWise_vulkan(VulkanLayer, ConvolutionDepthWise):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_depthwise = None
        self.pipeline_depthwise_pack4 = None
        self.pipeline_group = None
        self.pipeline_packing = None
        self.weight_data_gpu: VkMat | None = None
        self.weight_data_gpu_pack4: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None
        self.bias_data_gpu_pack4: VkMat | None = None
        self._tile_w = 8

    def _depthwise(self) -> bool:
        return self.group == self.num_output == self.num_input()

    def create_pipeline_vk(self, opt) -> int:
        # a CPU device (lavapipe) is bound by loads: longer row tiles reuse each loaded row more
        self._tile_w = 8 if self.cpu_device() else 4
        specs = [
            self.kernel_w,
            self.kernel_h,
            self.dilation_w,
            self.dilation_h,
            self.stride_w,
            self.stride_h,
            1 if self.bias_term else 0,
            *activation_specs(self.activation_type, self._act),
            self._tile_w,
        ]
        if opt.use_packing_layout:
            self.pipeline_packing = self.new_packing_pipeline(opt)
            if self.pipeline_packing is None:
                return -1
        if not self._depthwise():
            self.pipeline_group = self.new_pipeline("convolutiondepthwise_group", opt, specs, LOCAL_1D)
            return 0 if self.pipeline_group else -1
        # the channels are num_output: without a hint they decide the packing
        pack1 = self.may_see_elempack(1, opt, extent=self.num_output)
        self.pipeline_depthwise = self.new_pipeline(
            "convolutiondepthwise", opt, specs, LOCAL_2D, needed=pack1
        )
        if self.pipeline_depthwise is None:
            return -1
        if opt.use_packing_layout and self.num_output % 4 == 0:
            self.pipeline_depthwise_pack4 = self.new_pipeline(
                "convolutiondepthwise_pack4", opt, specs, LOCAL_2D
            )
            if self.pipeline_depthwise_pack4 is None:
                return -1
        return 0

    def upload_model(self, cmd, opt) -> int:
        assert self._weight2d is not None  # load_model() prepared it

        def upload(array):
            return upload_weights(cmd, np.asarray(array, dtype=np.float32), opt)

        bias = self._bias.reshape(-1) if self._bias is not None else None
        if self._depthwise():
            # [c][maxk]; packed: [c/4][maxk][4]
            self.weight_data_gpu = upload(self._weight2d)
            if bias is not None:
                self.bias_data_gpu = upload(bias)
            if self.pipeline_depthwise_pack4 is not None:
                maxk = self._weight2d.shape[1]
                self.weight_data_gpu_pack4 = upload(self._weight2d.reshape(-1, 4, maxk).transpose(0, 2, 1))
                if bias is not None:
                    self.bias_data_gpu_pack4 = self.bias_data_gpu
            return 0
        # [group][outc_g][inc_g * maxk] -> [group][vec4s][inc_g * maxk][4], zero past outc_g
        g = self.group
        outc_g = self.num_output // g
        vec4s = -(-outc_g // 4)
        weight = np.zeros((g, vec4s * 4, self._weight2d.shape[1]), np.float32)
        weight[:, :outc_g] = self._weight2d.reshape(g, outc_g, -1)
        self.weight_data_gpu = upload(weight.reshape(g, vec4s, 4, -1).transpose(0, 1, 3, 2))
        if bias is not None:
            padded = np.zeros((g, vec4s * 4), np.float32)
            padded[:, :outc_g] = bias.reshape(g, outc_g)
            self.bias_data_gpu = upload(padded)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.weight_data_gpu_pack4 = None
        self.bias_data_gpu = None
        self.bias_data_gpu_pack4 = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims != 3:
            return int(self.accepts_3d(bottom)) - 1
        depthwise = self._depthwise()
        pack4 = depthwise and bottom.elempack == 4 and self.pipeline_depthwise_pack4 is not None
        if not pack4:
            bottom = self.in_elempack(cmd, bottom, 1, opt)
            if isinstance(bottom, int):
                return bottom
        elempack = bottom.elempack
        w, h, channels = bottom.w, bottom.h, bottom.c * elempack
        if channels != self.num_input():
            log.error(
                "ConvolutionDepthWise %r: %d input channels, weights expect %d",
                self.name,
                channels,
                self.num_input(),
            )
            return -1
        t, b, l, r = self.pads((h, w))
        out = self.output_shape((h, w), (t, b, l, r))
        if out is None:
            return -1
        outh, outw = out
        top.create(
            outw,
            outh,
            self.num_output // elempack,
            elemsize=elemsize_for(elempack, is_fp16(bottom)),
            elempack=elempack,
            allocator=opt.blob_vkallocator,
        )
        if top.empty():
            return -100
        tiles = -(-outw // self._tile_w)
        # the shaders' push constant blocks, in order (c counts packed channels)
        constants = [w, h, bottom.c, bottom.cstep, outw, outh, top.c, top.cstep, l, t, float(self.pad_value)]
        if not depthwise:
            outc_g = self.num_output // self.group
            constants += [channels // self.group, outc_g]
            weight, bias = self.weight_data_gpu, self.bias_data_gpu
            grid = (tiles * outh, -(-outc_g // 4), self.group)
            pipeline = self.pipeline_group
        else:
            if pack4:
                weight, bias = self.weight_data_gpu_pack4, self.bias_data_gpu_pack4
                pipeline = self.pipeline_depthwise_pack4
            else:
                weight, bias = self.weight_data_gpu, self.bias_data_gpu
                pipeline = self.pipeline_depthwise
            grid = (tiles, outh, top.c)
        cmd.record_pipeline(
            pipeline, [bottom, top, weight, bias if self.bias_term else weight], constants, grid
        )
        return 0
