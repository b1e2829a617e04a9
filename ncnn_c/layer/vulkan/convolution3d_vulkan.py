"""Convolution3D on the GPU: a direct convolution over d, h, w with virtual pads, bias and
activation fused (convolution3d.comp), one output position x 4 output channels per
invocation.

Pads (SAME included) and the output shape come from the CPU class's ``pads`` and
``output_shape`` (``_geometry.Window``). Blobs are elempack 1 (``support_packing`` off:
the net unpacks a packed bottom first); fp16 storage and arithmetic follow the options,
the running sums stay fp32.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from .._fused_activation import activation_specs, activation_values
from ..convolution3d import Convolution3D
from . import LOCAL_1D, VulkanLayer, upload_weights, vec4_weights

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class Convolution3D_vulkan(VulkanLayer, Convolution3D):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.pipeline_convolution3d = None
        self.weight_data_gpu: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None

    def create_pipeline_vk(self, opt) -> int:
        specs = [*self._per_axis("kernel")[::-1], *self._per_axis("dilation")[::-1]]
        specs += [*self._per_axis("stride")[::-1], 1 if self.bias_term else 0]
        specs += activation_specs(self.activation_type, activation_values(self.activation_params))
        self.pipeline_convolution3d = self.new_pipeline("convolution3d", opt, specs, LOCAL_1D)
        return 0 if self.pipeline_convolution3d else -1

    def upload_model(self, cmd, opt) -> int:
        assert self._weight is not None  # load_model() prepared it
        weight, bias = vec4_weights(self._weight.reshape(self.num_output, -1), self._bias, self.group)
        self.weight_data_gpu = upload_weights(cmd, np.ascontiguousarray(weight), opt)
        if bias is not None:
            self.bias_data_gpu = upload_weights(cmd, bias, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        assert self._weight is not None  # load_model() prepared it
        if bottom.dims != 4 or bottom.elempack != 1:
            log.error(
                "%s %r: needs a 4-D elempack 1 blob, got dims %d elempack %d",
                self.type,
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        inc_g = self._weight.shape[2] // int(np.prod(self._per_axis("kernel")))
        if bottom.c != inc_g * self.group:
            log.error(
                "%s %r: %d input channels, weights expect %d",
                self.type,
                self.name,
                bottom.c,
                inc_g * self.group,
            )
            return -1
        size = (bottom.d, bottom.h, bottom.w)
        pads = self.pads(size)
        out = self.output_shape(size, pads)
        if out is None:
            return -1
        outd, outh, outw = out
        top.create(
            outw,
            outh,
            outd,
            self.num_output,
            elemsize=bottom.elemsize,
            elempack=1,
            allocator=opt.blob_vkallocator,
        )
        if top.empty():
            return -100
        outc_g = self.num_output // self.group
        # the shader's push constant block, in order
        constants = [bottom.w, bottom.h, bottom.d, bottom.cstep, outw, outh, outd, top.cstep]
        constants += [pads[4], pads[2], pads[0], float(self.pad_value), inc_g, outc_g, self.group]
        bias = self.bias_data_gpu if self.bias_term else self.weight_data_gpu
        grid = (outw, outh * outd, -(-outc_g // 4) * self.group)
        cmd.record_pipeline(
            self.pipeline_convolution3d, [bottom, top, self.weight_data_gpu, bias], constants, grid
        )
        return 0
