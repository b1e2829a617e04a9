"""DeformableConv2D on the GPU, with and without the mask (v2 / v1): one dispatch
(deformableconv2d.comp) samples every tap bilinearly at its offset location and applies the
weights, bias and fused activation.

The output size is ``_geometry.output_shape`` of the explicit pads, as the CPU class
computes it (ncnn has no SAME form here); the offset and mask blobs must match it. Blobs
are elempack 1 (the net unpacks packed bottoms); locations and bilinear weights are fp32
whatever the storage type.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .._fused_activation import activation_specs, activation_values
from .._geometry import output_shape, show
from ..deformableconv2d import DeformableConv2D
from . import LOCAL_2D, VulkanLayer, upload_weights, vec4_weights

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")


class DeformableConv2D_vulkan(VulkanLayer, DeformableConv2D):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.pipeline_deformableconv2d = None
        self.pipeline_deformableconv2d_mask = None
        self.weight_data_gpu: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None

    def create_pipeline_vk(self, opt) -> int:
        specs = [
            *self._per_axis("kernel")[::-1],
            *self._per_axis("dilation")[::-1],
            *self._per_axis("stride")[::-1],
        ]
        act = activation_specs(self.activation_type, activation_values(self.activation_params))
        bias = 1 if self.bias_term else 0
        # v2 (a mask) when the layer has three bottoms; the other form is deferred, built
        # only if a forward ever asks for it
        masked = len(self.bottoms) == 3
        self.pipeline_deformableconv2d = self.new_pipeline(
            "deformableconv2d", opt, [*specs, bias, 0, *act], LOCAL_2D, needed=not masked
        )
        self.pipeline_deformableconv2d_mask = self.new_pipeline(
            "deformableconv2d", opt, [*specs, bias, 1, *act], LOCAL_2D, needed=masked
        )
        if self.pipeline_deformableconv2d is None or self.pipeline_deformableconv2d_mask is None:
            return -1
        return 0

    def upload_model(self, cmd, opt) -> int:
        assert self._weight is not None  # load_model() prepared it
        weight, bias = vec4_weights(self._weight, self._bias, 1)
        self.weight_data_gpu = upload_weights(cmd, weight, opt)
        if bias is not None:
            self.bias_data_gpu = upload_weights(cmd, bias, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def forward_vk(self, bottoms, tops, cmd, opt) -> int:
        assert self._weight is not None  # load_model() prepared it
        if len(bottoms) not in (2, 3) or any(b.dims != 3 or b.elempack != 1 for b in bottoms):
            log.error(
                "DeformableConv2D %r: needs 3-D elempack 1 input, offset (and mask) blobs, got %d blobs",
                self.name,
                len(bottoms),
            )
            return -1
        bottom, offset = bottoms[0], bottoms[1]
        mask = bottoms[2] if len(bottoms) == 3 else None
        maxk = self.kernel_w * self.kernel_h
        if bottom.c * maxk != self._weight.shape[1]:
            log.error(
                "DeformableConv2D %r: %d input channels, weights expect %d",
                self.name,
                bottom.c,
                self._weight.shape[1] // maxk,
            )
            return -1
        pads = self.explicit_pads()
        out = output_shape((bottom.h, bottom.w), self.extents(), self._per_axis("stride"), pads)
        outh, outw = out
        if (
            min(out) <= 0
            or (offset.c, offset.h, offset.w) != (2 * maxk, outh, outw)
            or (mask is not None and (mask.c, mask.h, mask.w) != (maxk, outh, outw))
        ):
            log.error(
                "DeformableConv2D %r: offset %s / mask %s do not fit %d taps of a %s output",
                self.name,
                (offset.c, offset.h, offset.w),
                None if mask is None else (mask.c, mask.h, mask.w),
                maxk,
                show(out),
            )
            return -1
        top = tops[0]
        top.create(
            outw, outh, self.num_output, elemsize=bottom.elemsize, elempack=1, allocator=opt.blob_vkallocator
        )
        if top.empty():
            return -100
        # the shader's push constant block, in order
        constants = [bottom.w, bottom.h, bottom.c, bottom.cstep, outw, outh, self.num_output, top.cstep]
        constants += [offset.cstep, offset.cstep if mask is None else mask.cstep, pads[2], pads[0]]
        pipeline = self.pipeline_deformableconv2d if mask is None else self.pipeline_deformableconv2d_mask
        bias = self.bias_data_gpu if self.bias_term else self.weight_data_gpu
        bindings = [bottom, offset, offset if mask is None else mask, top, self.weight_data_gpu, bias]
        cmd.record_pipeline(pipeline, bindings, constants, (outw, outh, -(-self.num_output // 4)))
        return 0
