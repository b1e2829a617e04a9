"""InnerProduct on the GPU: a GEMV (or, for the batched 2-D form, a GEMM) in one dispatch of
innerproduct.comp, 4 outputs per invocation from vec4 weights uploaded once (as halves
when fp16 holds them exactly, as Convolution does: half the bytes, bit-identical results).

The input may be any rank and packing: the shader walks it in the CPU layer's flatten order
(channels, rows, then values) through push-constant strides, so no flatten or unpack copy
is made. Which form applies (batched rows or one flattened vector) is the CPU layer's rule.
The 1-D output is elempack 1 (a 1-D blob's scalars lie in the same order packed or not, so
it is labelled elempack 4 when packing is on and num_output divides by 4); batched rows
pack when their count divides by 4.

On GPUs the 1-row form of a long dot product (num_input >= SPLITK_MIN_INPUT) runs
innerproduct_splitk.comp instead: a work group of SPLITK_LANES invocations per 8 output
vec4s, splitting num_input 32 ways and summing in shared memory. innerproduct.comp walks
all num_input values in one invocation, which on an H200 left VGG16's 25088 -> 4096 layer
with 1024 invocations for the whole GPU. CPU devices keep innerproduct.comp (one long walk
per invocation is what llvmpipe's threads want). ``NCNN_C_IP_SPLITK=auto|always|never``
overrides the choice (the tests force it on lavapipe).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from .._fused_activation import activation_specs
from ..innerproduct import InnerProduct
from . import LOCAL_1D, VulkanLayer, fp16_exact, numpy_shape, outer_extent, shader_policy, upload_weights
from ._int8 import Int8Passes

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")

# (output vec4s, K lanes) of one innerproduct_splitk.comp work group; K lanes a power of 2
SPLITK_LANES = (8, 32)
SPLITK_MIN_INPUT = 512


class InnerProduct_vulkan(VulkanLayer, InnerProduct):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_innerproduct = None
        self.pipeline_innerproduct_splitk = None
        self.weight_data_gpu: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None
        self._weight_fp16 = False
        self._weight_halves: np.ndarray | None = None  # the fp16 weights, from the check to the upload
        self._int8_passes: Int8Passes | int | None = None

    def create_pipeline_vk(self, opt) -> int:
        # int8 weights: the float shaders give the raw int32 sums, passes around them (_int8.py)
        self._int8_passes = Int8Passes.setup(self, opt, "_weight")
        if self._int8_passes == -1:
            return -1
        if isinstance(self._int8_passes, Int8Passes):
            opt = self._int8_passes.opt  # fp32 blobs: the raw int32 sums do not fit fp16
        self._weight_fp16 = self._weights_fit_fp16()
        specs = [
            1 if self.bias_term else 0,
            *activation_specs(self.activation_type, self.activation_params),
            int(self._weight_fp16),
        ]
        self.pipeline_innerproduct = self.new_pipeline("innerproduct", opt, specs, LOCAL_1D)
        if self.pipeline_innerproduct is None:
            return -1
        try:
            policy = shader_policy("NCNN_C_IP_SPLITK", "auto")
        except ValueError as e:
            log.error("InnerProduct %r: %s", self.name, e)
            return -1
        assert self._weight is not None  # prepared above
        if policy == "always" or (
            policy == "auto" and not self.cpu_device() and self._weight.shape[1] >= SPLITK_MIN_INPUT
        ):
            local = (*SPLITK_LANES, 1)
            self.pipeline_innerproduct_splitk = self.new_pipeline(
                "innerproduct_splitk", opt, [*specs, *SPLITK_LANES], local
            )
            if self.pipeline_innerproduct_splitk is None:
                return -1
        return 0

    def _weights_fit_fp16(self) -> bool:
        """Whether every weight converts to fp16 and back unchanged (NaN and overflow never do);
        the halves are kept for upload_model."""
        if self._weight is None:
            self._prepare()
        assert self._weight is not None  # set by _prepare()
        self._weight_halves = fp16_exact(self._weight)
        return self._weight_halves is not None

    def upload_model(self, cmd, opt) -> int:
        if isinstance(self._int8_passes, Int8Passes):
            self._int8_passes.upload_model(cmd, opt)
        if self._weight is None:
            self._prepare()
        assert self._weight is not None  # set by _prepare()
        groups = -(-self.num_output // 4)
        weight = self._weight
        if self._weight_fp16:
            # pairs of halves in 32-bit words, the first in the low half (unpackHalf2x16)
            weight = self._weight_halves if self._weight_halves is not None else weight.astype(np.float16)
        self._weight_halves = None
        if groups * 4 != self.num_output:
            padded = np.zeros((groups * 4, weight.shape[1]), weight.dtype)
            padded[: self.num_output] = weight
            weight = padded
        # [groups * 4][num_input] -> [num_input][groups][4]
        self.weight_data_gpu = upload_weights(cmd, weight.T, opt)
        if self._bias is not None:
            bias = np.zeros(groups * 4, np.float32)
            bias[: self.num_output] = self._bias
            self.bias_data_gpu = upload_weights(cmd, bias, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        return Int8Passes.run(self._int8_passes, self._forward_float_vk, bottom, top, cmd, opt)

    def _forward_float_vk(self, bottom, top, cmd, opt) -> int:
        assert self._weight is not None  # load_model() prepared it
        num_input = self._weight.shape[1]
        dims = bottom.dims
        pk = bottom.elempack
        shape = numpy_shape(bottom)
        logical = (outer_extent(bottom),) + shape[1:]
        alloc = opt.blob_vkallocator
        lane = bottom.elemsize // pk
        n = self.num_output
        if dims == 2 and logical[1] == num_input:
            rows = logical[0]
            units, size, ustride, batched = 1, num_input, bottom.w, 1
            opk = 4 if opt.use_packing_layout and rows % 4 == 0 else 1
            top.create(n, rows // opk, elemsize=lane * opk, elempack=opk, allocator=alloc)
        else:
            count = int(np.prod(logical))
            if count != num_input:
                log.error(
                    "InnerProduct %r: input of %d values (shape %s), weights expect %d",
                    self.name,
                    count,
                    logical,
                    num_input,
                )
                return -1
            rows, batched = 1, 0
            if dims == 1:
                units, size, ustride, pk = 1, logical[0], 1, 1
            elif dims == 2:
                units, size, ustride = logical[0], logical[1], bottom.w
            else:
                units, size, ustride = logical[0], count // logical[0], bottom.cstep
            opk = 4 if opt.use_packing_layout and n % 4 == 0 else 1
            top.create(n // opk, elemsize=lane * opk, elempack=opk, allocator=alloc)
            opk = 1  # the scalars of a 1-D blob lie in the same order packed or not
        if top.empty():
            return -100
        bias = self.bias_data_gpu if self.bias_data_gpu is not None else self.weight_data_gpu
        constants = [units, size, ustride, pk, rows, n, opk, batched]
        bindings = [bottom, top, self.weight_data_gpu, bias]
        if self.pipeline_innerproduct_splitk is not None and not batched:
            lanes_g, lanes_k = SPLITK_LANES
            grid = (-(-n // (4 * lanes_g)) * lanes_g, lanes_k, 1)
            cmd.record_pipeline(self.pipeline_innerproduct_splitk, bindings, constants, grid)
            return 0
        grid = (-(-n // 4), rows, 1)
        cmd.record_pipeline(self.pipeline_innerproduct, bindings, constants, grid)
        return 0
