"""Convolution1D on the GPU: a row-tiled direct convolution with virtual pads, bias and activation fused.

A 2-D blob (h = channels, w = length) is a stack of rows w elements apart. One dispatch
computes a row tile x 4 output channels per invocation, with the left/right pads (SAME
included, from the CPU class's ``pads``) read as pad_value rather than materialised.

Packing follows ncnn's convention, fixed at create_pipeline from the weights' shape: with
use_packing_layout the layer reads elempack 4 when its input channel count divides by 4
(convolution1d_pack4.comp, 4x4 weight blocks) and writes elempack 4 when num_output does
(out_pack4 in either shader), so ncnn's pack1, pack4, pack1to4 and pack4to1 forms are two
shader files. A bottom in the other packing (its producer could not pack) is converted
first by the net's shared layout pipeline.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from .._fused_activation import activation_specs
from ..convolution1d import Convolution1D
from . import LOCAL_1D, VulkanLayer, elemsize_for, is_fp16, upload_weights

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class Convolution1D_vulkan(VulkanLayer, Convolution1D):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_convolution1d = None
        self.pipeline_packing = None
        self.weight_data_gpu: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None
        self._tile_w = 8
        self._out_groups = 1
        self._in_pack4 = False
        self._out_pack4 = False

    def create_pipeline_vk(self, opt) -> int:
        packing = bool(opt.use_packing_layout)
        self._in_pack4 = packing and self.num_input() % 4 == 0
        self._out_pack4 = packing and self.num_output % 4 == 0
        self._tile_w, self._out_groups = self._tile_shape()
        if packing:
            self.pipeline_packing = self.new_packing_pipeline(opt)
            if self.pipeline_packing is None:
                return -1
        specs = [self.kernel_w, self.dilation_w, self.stride_w, 1 if self.bias_term else 0]
        specs += [
            *activation_specs(self.activation_type, self._act),
            self._tile_w,
            int(self._out_pack4),
            self._out_groups,
        ]
        shader = "convolution1d_pack4" if self._in_pack4 else "convolution1d"
        self.pipeline_convolution1d = self.new_pipeline(shader, opt, specs, LOCAL_1D)
        return 0 if self.pipeline_convolution1d else -1

    def _tile_shape(self) -> tuple[int, int]:
        """(tile_w, out_groups): positions x output vec4s per invocation, for this device.

        A CPU device (lavapipe) is bound by loads, so bigger register tiles win there:
        measured on lavapipe (256 -> 256 channels, length 2000, kernel 3, both packings,
        whole extract), 16 positions x 2 vec4s took 500-570 ms against 790-850 ms for 8 x 1;
        16 x 4 gained little more (455-465 ms, noisy on a shared box) for longer compiles.
        A GPU wants many light invocations (as Convolution_vulkan measured on an H200)."""
        if not self.cpu_device():
            return 4, 1
        return 16, 2 if self.num_output > 4 else 1

    def upload_model(self, cmd, opt) -> int:
        assert self._weight2d is not None  # load_model() prepared it
        g = self._out_groups
        blocks = -(-self.num_output // (4 * g))
        # [outc][inc * kw], zero-filled to [blocks][g][4 out][inc * kw]
        weight = np.zeros((blocks * g * 4, self._weight2d.shape[1]), np.float32)
        weight[: self.num_output] = self._weight2d
        if self._in_pack4:
            # -> [blocks][inc/4][kw][g][4 in][4 out]
            weight = weight.reshape(blocks, g, 4, -1, 4, self.kernel_w).transpose(0, 3, 5, 1, 4, 2)
        else:
            # -> [blocks][inc * kw][g][4 out]
            weight = weight.reshape(blocks, g, 4, -1).transpose(0, 3, 1, 2)
        self.weight_data_gpu = upload_weights(cmd, weight, opt)
        if self.bias_term:
            assert self._bias is not None  # load_model() prepared it
            bias = np.zeros(blocks * g * 4, np.float32)
            bias[: self.num_output] = self._bias.reshape(-1)
            self.bias_data_gpu = upload_weights(cmd, bias, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims != 2:
            log.error("Convolution1D %r: needs a 2-D blob, got dims %d", self.name, bottom.dims)
            return -1
        in_pack = 4 if self._in_pack4 else 1
        bottom = self.in_elempack(cmd, bottom, in_pack, opt)
        if isinstance(bottom, int):
            return bottom
        w, channels = bottom.w, bottom.h * in_pack
        if channels != self.num_input():
            log.error(
                "Convolution1D %r: %d input channels, weights expect %d",
                self.name,
                channels,
                self.num_input(),
            )
            return -1
        l, r = self.pads((w,))
        out = self.output_shape((w,), (l, r))
        if out is None:
            return -1
        (outw,) = out
        out_pack = 4 if self._out_pack4 else 1
        top.create(
            outw,
            self.num_output // out_pack,
            elemsize=elemsize_for(out_pack, is_fp16(bottom)),
            elempack=out_pack,
            allocator=opt.blob_vkallocator,
        )
        if top.empty():
            return -100
        # the shaders' push constant block, in order (h counts packed rows)
        constants = [w, bottom.h, outw, self.num_output, l, float(self.pad_value)]
        bias = self.bias_data_gpu if self.bias_term else self.weight_data_gpu
        grid = (-(-outw // self._tile_w), -(-self.num_output // (4 * self._out_groups)), 1)
        cmd.record_pipeline(
            self.pipeline_convolution1d, [bottom, top, self.weight_data_gpu, bias], constants, grid
        )
        return 0
