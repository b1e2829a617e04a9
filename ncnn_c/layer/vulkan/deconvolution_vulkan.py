"""Deconvolution on the GPU: a gather-form transposed convolution with crop and activation fused.

One dispatch computes the cropped output directly (each output position gathers the input
pixels whose kernel taps land on it), so no full-size intermediate is made; the crop and
output size come from the CPU class's ``deconv_geometry`` (pads, output_pad,
output_w/output_h with SAME pads). An invocation of the grouped shaders computes a row tile
of outputs stride_w apart (they are hit by the same taps) x 4 output channels. The same class serves DeconvolutionDepthWise
(deconvolutiondepthwise_vulkan.py) through its group count.

Packing follows ncnn's convention, fixed at create_pipeline from the weights' shape: with
use_packing_layout the layer reads elempack 4 when a group's input channel count divides
by 4 (deconvolution_pack4.comp, 4x4 weight blocks) and writes elempack 4 when a group's
output count does (out_pack4 in either shader), so ncnn's pack4, pack1to4, pack4to1 and
pack1 forms are two shader files. A depthwise layer (group == channels == num_output)
runs deconvolutiondepthwise(.comp|_pack4.comp): one channel (or packed channel) per
invocation, its packing that of the blob. A bottom in the other packing (its producer
could not pack) is converted first by the net's shared layout pipeline.

The GPU half is the mixin ``DeconvolutionGpu`` (pipelines, weights, the dispatch), which
Deconvolution1D_vulkan shares: a 2-D blob's rows are its channels, so it is the 3-D case
with h = 1 and a channel step of w.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from .._fused_activation import activation_specs
from ..deconvolution import Deconvolution, flat_weights
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

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class DeconvolutionGpu(VulkanLayer):
    """The GPU form of a transposed convolution, ahead of a CPU class with Deconvolution's
    params (kernel_w/h, dilation_w/h, stride_w/h, group, num_output, weight_data_size,
    bias_term, the fused activation) and its weight_data / bias_data Mats."""

    if TYPE_CHECKING:
        # the params and weights of the CPU class after this mixin in the MRO
        def __getattr__(self, name: str) -> Any: ...

    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_deconvolution = None
        self.pipeline_packing = None
        self.weight_data_gpu: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None
        self._in_pack4 = False
        self._out_pack4 = False
        self._tile_w = 8

    def _inc_g(self) -> int:
        return self.weight_data_size // (self.kernel_w * self.kernel_h * self.num_output)

    def _depthwise(self) -> bool:
        return self.group > 1 and self.group == self.num_output == self._inc_g() * self.group

    def create_pipeline_vk(self, opt) -> int:
        specs = [
            self.kernel_w,
            self.kernel_h,
            self.dilation_w,
            self.dilation_h,
            self.stride_w,
            self.stride_h,
            1 if self.bias_term else 0,
            *activation_specs(self.activation_type, self.activation_params),
        ]
        packing = bool(opt.use_packing_layout)
        if packing:
            self.pipeline_packing = self.new_packing_pipeline(opt)
            if self.pipeline_packing is None:
                return -1
        if self._depthwise():
            self._in_pack4 = self._out_pack4 = packing and self.num_output % 4 == 0
            shader = "deconvolutiondepthwise_pack4" if self._in_pack4 else "deconvolutiondepthwise"
            self.pipeline_deconvolution = self.new_pipeline(shader, opt, specs, LOCAL_2D)
            return 0 if self.pipeline_deconvolution else -1
        self._in_pack4 = packing and self._inc_g() % 4 == 0
        self._out_pack4 = packing and (self.num_output // self.group) % 4 == 0
        shader = "deconvolution_pack4" if self._in_pack4 else "deconvolution"
        self._tile_w = self._row_tile()
        specs += [int(self._out_pack4), self._tile_w]
        self.pipeline_deconvolution = self.new_pipeline(shader, opt, specs, LOCAL_1D)
        return 0 if self.pipeline_deconvolution else -1

    def _row_tile(self) -> int:
        """Outputs per invocation of the grouped shaders (stride_w apart, so they share taps
        and every weight load feeds all of them).

        Measured on lavapipe (64 -> 64 channels, 26x26 -> 52x52, 4x4 stride 2, whole
        extract): 1 output per invocation 360-415 ms, 4: 195-205 ms, 8: 135-195 ms, 16:
        150-190 ms. A GPU wants many light invocations: a small tile there."""
        return 8 if self.cpu_device() else 2

    def upload_model(self, cmd, opt) -> int:
        def upload(array: np.ndarray) -> VkMat:
            return upload_weights(cmd, np.asarray(array, dtype=np.float32), opt)

        g = self.group
        outc_g = self.num_output // g
        maxk = self.kernel_w * self.kernel_h
        weight = flat_weights(self.weight_data)
        bias = flat_weights(self.bias_data) if self.bias_term else None
        if self._depthwise():
            # [c][maxk]; packed: [c/4][maxk][4]
            if self._in_pack4:
                weight = weight.reshape(-1, 4, maxk).transpose(0, 2, 1)
            self.weight_data_gpu = upload(weight)
            if bias is not None:
                self.bias_data_gpu = upload(bias)
            return 0
        inc_g = self._inc_g()
        # stored [group][outc_g][inc_g][maxk] -> [group][vec4s][inc_g][maxk][4 out]
        packed, padded_bias = vec4_weights(weight.reshape(g * outc_g, -1), bias, g)
        if self._in_pack4:
            # -> [group][vec4s][inc_g/4][maxk][4 in][4 out]
            vec4s = packed.shape[1]
            packed = packed.reshape(g, vec4s, inc_g // 4, 4, maxk, 4).transpose(0, 1, 2, 4, 3, 5)
        self.weight_data_gpu = upload(packed)
        if padded_bias is not None:
            self.bias_data_gpu = upload(padded_bias)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def gpu_bottom(self, cmd, bottom, opt):
        """``bottom`` in the elempack the pipelines read, its channels (c of a 3-D blob, h of
        a 2-D one) checked against the weights; an int error code (logged) otherwise."""
        bottom = self.in_elempack(cmd, bottom, 4 if self._in_pack4 else 1, opt)
        if isinstance(bottom, int):
            return bottom
        inc = self._inc_g() * self.group
        if outer_extent(bottom) != inc:
            log.error(
                "%s %r: %d input channels, weights expect %d",
                self.type,
                self.name,
                outer_extent(bottom),
                inc,
            )
            return -1
        return bottom

    def record_deconvolution(self, cmd, bottom, top, opt, size, out, crop) -> int:
        """Create ``top`` (``out`` = (outw,) or (outw, outh) spatial, the channels after) and
        record the dispatch. ``size`` = (w, h, cstep) of the bottom's channels, ``crop`` =
        (left, top) cut off the full output."""
        out_pack = 4 if self._out_pack4 else 1
        top.create(
            *out,
            self.num_output // out_pack,
            elemsize=elemsize_for(out_pack, is_fp16(bottom)),
            elempack=out_pack,
            allocator=opt.blob_vkallocator,
        )
        if top.empty():
            return -100
        w, h, cstep = size
        outw, outh = out[0], out[1] if len(out) > 1 else 1
        outcstep = top.cstep if top.dims >= 3 else outw * outh
        l, t = crop
        # the shaders' push constant blocks, in order (c counts packed channels, outc channels)
        constants = [w, h, outer_extent(bottom) // bottom.elempack, cstep, outw, outh, self.num_output]
        constants += [outcstep, l, t]
        if self._depthwise():
            grid: tuple[int, int, int] = (outw, outh, self.num_output // out_pack)
        else:
            outc_g = self.num_output // self.group
            constants += [self._inc_g(), outc_g]
            # (row, phase, tile): tile_w outputs stride_w apart per invocation
            per_phase = -(-outw // self.stride_w)
            tiles = -(-per_phase // self._tile_w)
            grid = (outh * self.stride_w * tiles, -(-outc_g // 4), self.group)
        bias = self.bias_data_gpu if self.bias_term else self.weight_data_gpu
        cmd.record_pipeline(
            self.pipeline_deconvolution, [bottom, top, self.weight_data_gpu, bias], constants, grid
        )
        return 0


class Deconvolution_vulkan(DeconvolutionGpu, Deconvolution):
    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims != 3:
            return int(self.accepts_3d(bottom)) - 1
        bottom = self.gpu_bottom(cmd, bottom, opt)
        if isinstance(bottom, int):
            return bottom
        geom = self.deconv_geometry(bottom.w, bottom.h, self.kernel_w, self.kernel_h)
        if geom is None:
            return -1
        full_w, full_h, (t, b, l, r) = geom
        size = (bottom.w, bottom.h, bottom.cstep)
        return self.record_deconvolution(
            cmd, bottom, top, opt, size, (full_w - l - r, full_h - t - b), (l, t)
        )
