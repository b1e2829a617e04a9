"""ConvolutionDepthWise on the GPU: depthwise (elempack 1 and 4) and grouped convolution.

A depthwise layer (group == channels == num_output) keeps its bottom's packing: one
invocation computes a row tile of one channel (convolutiondepthwise.comp) or of one packed
channel (convolutiondepthwise_pack4.comp). Any other grouping (several channels per group,
or a channel multiplier) runs convolutiondepthwise_group.comp on elempack 1 blobs, a row
tile x 4 output channels of one group per invocation; a packed bottom is unpacked first by
the net's shared layout pipeline. Padding (SAME included, from the GPU Convolution's
``pads``) is virtual, and the bias and fused activation are applied in the same dispatch.

The GPU half is the mixin ``DepthwiseGpu`` (pipelines, weights, the dispatch), which
ConvolutionDepthWise1D_vulkan shares: a 2-D blob's rows are its channels, so it is the
3-D case with h = 1 and a channel step of w.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from .._fused_activation import activation_specs
from ..convolutiondepthwise import ConvolutionDepthWise
from . import (
    LOCAL_1D,
    LOCAL_2D,
    VulkanLayer,
    elemsize_for,
    is_fp16,
    outer_extent,
    upload_weights,
    vec4_weights,
)
from ._int8 import Int8Passes

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class DepthwiseGpu(VulkanLayer):
    """The GPU form of a grouped convolution, ahead of a CPU class with ConvolutionDepthWise's
    params (kernel_w/h, dilation_w/h, stride_w/h, group, num_output, bias_term, pad_value,
    the fused activation) and ``num_input()``; ``gpu_weights`` and ``gpu_activation`` give
    its prepared weights."""

    if TYPE_CHECKING:
        # the params of the CPU class after this mixin in the MRO
        def __getattr__(self, name: str) -> Any: ...

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
        self._int8_passes: Int8Passes | int | None = None

    def gpu_weights(self) -> tuple[np.ndarray, np.ndarray | None]:
        """([num_output][inc_g * maxk] weights, flat bias or None), fp32."""
        assert self._weight2d is not None  # load_model() prepared it
        return self._weight2d, self._bias.reshape(-1) if self._bias is not None else None

    def gpu_activation(self) -> np.ndarray:
        """The fused activation's params (param 10) as float32."""
        return self._act

    def _depthwise(self) -> bool:
        return self.group == self.num_output == self.num_input()

    def create_pipeline_vk(self, opt) -> int:
        # int8 weights: the float shaders give the raw int32 sums, passes around them (_int8.py)
        self._int8_passes = Int8Passes.setup(self, opt, "_weight2d")
        if self._int8_passes == -1:
            return -1
        if isinstance(self._int8_passes, Int8Passes):
            opt = self._int8_passes.opt  # fp32 blobs: the raw int32 sums do not fit fp16
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
            *activation_specs(self.activation_type, self.gpu_activation()),
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
        if isinstance(self._int8_passes, Int8Passes):
            self._int8_passes.upload_model(cmd, opt)
        weight2d, bias = self.gpu_weights()

        def upload(array):
            return upload_weights(cmd, np.asarray(array, dtype=np.float32), opt)

        if self._depthwise():
            # [c][maxk]; packed: [c/4][maxk][4]
            self.weight_data_gpu = upload(weight2d)
            if bias is not None:
                self.bias_data_gpu = upload(bias)
            if self.pipeline_depthwise_pack4 is not None:
                maxk = weight2d.shape[1]
                self.weight_data_gpu_pack4 = upload(weight2d.reshape(-1, 4, maxk).transpose(0, 2, 1))
                if bias is not None:
                    self.bias_data_gpu_pack4 = self.bias_data_gpu
            return 0
        weight, padded = vec4_weights(weight2d, bias, self.group)
        self.weight_data_gpu = upload(weight)
        if padded is not None:
            self.bias_data_gpu = upload(padded)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.weight_data_gpu_pack4 = None
        self.bias_data_gpu = None
        self.bias_data_gpu_pack4 = None

    def gpu_bottom(self, cmd, bottom, opt):
        """``bottom`` in the elempack the pipelines read (a depthwise layer keeps a packed
        one), its channels (c of a 3-D blob, h of a 2-D one) checked against the weights;
        an int error code (logged) otherwise."""
        pack4 = self._depthwise() and bottom.elempack == 4 and self.pipeline_depthwise_pack4 is not None
        if not pack4:
            bottom = self.in_elempack(cmd, bottom, 1, opt)
            if isinstance(bottom, int):
                return bottom
        if outer_extent(bottom) != self.num_input():
            log.error(
                "%s %r: %d input channels, weights expect %d",
                self.type,
                self.name,
                outer_extent(bottom),
                self.num_input(),
            )
            return -1
        return bottom

    def record_depthwise(self, cmd, bottom, top, opt, size, out, pads) -> int:
        """Create ``top`` (``out`` = (outw,) or (outw, outh) spatial, the channels after, in
        the bottom's packing) and record the dispatch. ``size`` = (w, h, cstep) of the
        bottom's channels, ``pads`` = (left, top) before the first input cell."""
        elempack = bottom.elempack
        top.create(
            *out,
            self.num_output // elempack,
            elemsize=elemsize_for(elempack, is_fp16(bottom)),
            elempack=elempack,
            allocator=opt.blob_vkallocator,
        )
        if top.empty():
            return -100
        w, h, cstep = size
        outw, outh = out[0], out[1] if len(out) > 1 else 1
        outcstep = top.cstep if top.dims >= 3 else outw * outh
        channels = outer_extent(bottom)
        tiles = -(-outw // self._tile_w)
        # the shaders' push constant blocks, in order (c counts packed channels)
        constants = [w, h, channels // elempack, cstep, outw, outh, self.num_output // elempack, outcstep]
        constants += [*pads, float(self.pad_value)]
        if not self._depthwise():
            outc_g = self.num_output // self.group
            constants += [channels // self.group, outc_g]
            weight, bias = self.weight_data_gpu, self.bias_data_gpu
            grid = (tiles * outh, -(-outc_g // 4), self.group)
            pipeline = self.pipeline_group
        else:
            if elempack == 4:
                weight, bias = self.weight_data_gpu_pack4, self.bias_data_gpu_pack4
                pipeline = self.pipeline_depthwise_pack4
            else:
                weight, bias = self.weight_data_gpu, self.bias_data_gpu
                pipeline = self.pipeline_depthwise
            grid = (tiles, outh, self.num_output // elempack)
        cmd.record_pipeline(
            pipeline, [bottom, top, weight, bias if self.bias_term else weight], constants, grid
        )
        return 0


class ConvolutionDepthWise_vulkan(DepthwiseGpu, ConvolutionDepthWise):
    def forward_vk(self, bottom, top, cmd, opt) -> int:
        return Int8Passes.run(self._int8_passes, self._forward_float_vk, bottom, top, cmd, opt)

    def _forward_float_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims != 3:
            return int(self.accepts_3d(bottom)) - 1
        bottom = self.gpu_bottom(cmd, bottom, opt)
        if isinstance(bottom, int):
            return bottom
        t, b, l, r = self.pads((bottom.h, bottom.w))
        out = self.output_shape((bottom.h, bottom.w), (t, b, l, r))
        if out is None:
            return -1
        outh, outw = out
        return self.record_depthwise(
            cmd, bottom, top, opt, (bottom.w, bottom.h, bottom.cstep), (outw, outh), (l, t)
        )
