"""Option: the switches that steer loading and inference, as ncnn's ``ncnn::Option``.

Every flag of ncnn's Option exists here with ncnn's default, so code written for
the PyPI ``ncnn`` package can set them unchanged. Flags that ncnn_c does not act on
yet are still stored: a layer that cannot honour one (fp16 storage, packing) simply
declares it unsupported and the net falls back to fp32 / elempack 1 for it.
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .gpu.pipelinecache import PipelineCache

# The flags that change generated shader code. Their order is part of the pipeline
# cache file format (SPIR-V entry keys, digests): appending is fine, reordering or
# removing needs a bump of the cache file version (see gpu/pipelinecache.py).
SHADER_OPTION_BITS = (
    "use_fp16_packed",
    "use_fp16_storage",
    "use_fp16_arithmetic",
    "use_int8_packed",
    "use_int8_storage",
    "use_int8_arithmetic",
    "use_bf16_packed",
    "use_bf16_storage",
    "use_packing_layout",
    "use_subgroup_ops",
    "use_shader_local_memory",
    "use_cooperative_matrix",
    "use_fp16_uniform",
    "use_int8_uniform",
)


def _default_threads() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


class Option:
    """Plain attribute bag with ncnn's names and defaults."""

    def __init__(self) -> None:
        self.lightmode = True
        self.num_threads = _default_threads()
        self.blob_allocator = None
        self.workspace_allocator = None
        self.openmp_blocktime = 20

        self.use_winograd_convolution = True
        self.use_sgemm_convolution = True
        self.use_int8_inference = True
        self.use_vulkan_compute = False
        self.use_bf16_packed = False
        self.use_bf16_storage = False
        self.use_fp16_packed = True
        self.use_fp16_storage = True
        self.use_fp16_arithmetic = True
        self.use_int8_packed = True
        self.use_int8_storage = True
        self.use_int8_arithmetic = True
        self.use_int16_packed = False
        self.use_int16_storage = False
        self.use_packing_layout = True
        self.use_local_pool_allocator = True
        self.use_shader_local_memory = True
        self.use_cooperative_matrix = True
        self.use_winograd23_convolution = True
        self.use_winograd43_convolution = True
        self.use_winograd63_convolution = True
        self.use_a53_a55_optimized_kernel = False
        self.use_fp16_uniform = True
        self.use_int8_uniform = True
        self.use_subgroup_ops = True
        self.use_image_storage = False
        self.use_tensor_storage = False
        self.use_shader_pack8 = False
        self.flush_denormals = 3

        # Vulkan side
        self.vulkan_device_index = -1
        self.blob_vkallocator = None
        self.workspace_vkallocator = None
        self.staging_vkallocator = None
        self.pipeline_cache: PipelineCache | None = None

        self.kvcache_allocator = None
        self.kvcache_vkallocator = None
        self.kvcache_max_seqlen_hint = 0

    def copy(self) -> Option:
        """Shallow copy: allocators and the pipeline cache are shared, flags are not."""
        return copy.copy(self)

    def shader_bits(self) -> int:
        """The option bits that select shader code, packed as in SHADER_OPTION_BITS."""
        bits = 0
        for i, name in enumerate(SHADER_OPTION_BITS):
            if getattr(self, name):
                bits |= 1 << i
        return bits

    def __repr__(self) -> str:
        flags = " ".join(f"{k}={v!r}" for k, v in vars(self).items() if isinstance(v, (bool, int)))
        return f"<ncnn_c.Option {flags}>"


# Feature mask bits (layer param key 31), see docs/layer-feat-mask in ncnn.
FEAT_NO_FP16_ARITHMETIC = 1 << 0
FEAT_NO_FP16_STORAGE = 1 << 1
FEAT_NO_BF16_STORAGE = 1 << 2
FEAT_NO_INT8 = 1 << 3
FEAT_NO_VULKAN = 1 << 4
FEAT_NO_SGEMM = 1 << 5
FEAT_NO_WINOGRAD = 1 << 6
FEAT_NO_THREADING = 1 << 7


def get_layer_option(opt: Option, layer) -> Option:
    """The option ``layer`` runs with: its feature mask applied, and the storage types it does not
    declare support for switched off, so the net hands it (and its shaders) fp32 blobs."""
    o = get_masked_option(opt, layer.featmask)
    fp16 = o.use_fp16_storage or o.use_fp16_packed or o.use_fp16_arithmetic
    bf16 = o.use_bf16_storage or o.use_bf16_packed
    if (fp16 and not layer.support_fp16_storage) or (bf16 and not layer.support_bf16_storage):
        o = o.copy() if o is opt else o
        if not layer.support_fp16_storage:
            o.use_fp16_storage = o.use_fp16_packed = o.use_fp16_arithmetic = False
        if not layer.support_bf16_storage:
            o.use_bf16_storage = o.use_bf16_packed = False
    return o


def get_masked_option(opt: Option, featmask: int) -> Option:
    """The option a layer with feature mask ``featmask`` runs with (ncnn's get_masked_option)."""
    if not featmask:
        return opt
    o = opt.copy()
    if featmask & FEAT_NO_FP16_ARITHMETIC:
        o.use_fp16_arithmetic = False
    if featmask & FEAT_NO_FP16_STORAGE:
        o.use_fp16_storage = False
        o.use_fp16_packed = False
    if featmask & FEAT_NO_BF16_STORAGE:
        o.use_bf16_storage = False
        o.use_bf16_packed = False
    if featmask & FEAT_NO_INT8:
        o.use_int8_inference = False
    if featmask & FEAT_NO_VULKAN:
        o.use_vulkan_compute = False
    if featmask & FEAT_NO_SGEMM:
        o.use_sgemm_convolution = False
    if featmask & FEAT_NO_WINOGRAD:
        o.use_winograd_convolution = False
        o.use_winograd23_convolution = False
        o.use_winograd43_convolution = False
        o.use_winograd63_convolution = False
    if featmask & FEAT_NO_THREADING:
        o.num_threads = 1
    return o
