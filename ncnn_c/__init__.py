"""ncnn_c: ncnn-compatible inference (numpy on the CPU, Vulkan compute on the GPU).

``import ncnn_c as ncnn`` gives the names of the PyPI ``ncnn`` package. Names are
resolved lazily so that importing the package does not load Vulkan or the shader
compiler until a GPU name is first used.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING

__version__ = "0.1.0"


class _StderrUnlessConfigured(logging.StreamHandler):
    """Print ncnn_c's warnings and errors to stderr, as ncnn does, unless the application
    configured logging itself (then records only propagate to its handlers)."""

    def emit(self, record: logging.LogRecord) -> None:
        if not logging.getLogger().handlers:
            super().emit(record)


_handler = _StderrUnlessConfigured()
_handler.setLevel(logging.WARNING)
_handler.setFormatter(logging.Formatter("ncnn_c: %(levelname)s: %(message)s"))
logging.getLogger("ncnn_c").addHandler(_handler)

# public name -> module that defines it
_EXPORTS = {
    "Mat": "mat",
    "Option": "option",
    "Allocator": "allocator",
    "PoolAllocator": "allocator",
    "UnlockedPoolAllocator": "allocator",
    "DataReader": "datareader",
    "DataReaderFromStdio": "datareader",
    "DataReaderFromMemory": "datareader",
    "DataReaderFromEmpty": "datareader",
    "ParamDict": "paramdict",
    "ModelBin": "modelbin",
    "ModelBinFromDataReader": "modelbin",
    "ModelBinFromMatArray": "modelbin",
    "Net": "net",
    "Extractor": "net",
    "Blob": "net",
    "Layer": "layer",
    "create_layer": "layer",
    "layer_to_index": "layer",
    "GpuInfo": "gpu.device",
    "VulkanDevice": "gpu.device",
    "create_gpu_instance": "gpu.device",
    "destroy_gpu_instance": "gpu.device",
    "get_gpu_count": "gpu.device",
    "get_default_gpu_index": "gpu.device",
    "get_gpu_info": "gpu.device",
    "get_gpu_device": "gpu.device",
    "start_gpu_device": "gpu.device",
    "PipelineCache": "gpu.pipelinecache",
    "VkMat": "gpu.vkmat",
    "VkCompute": "gpu.command",
    "Pipeline": "gpu.pipeline",
    "copy_make_border": "mat_ops",
    "copy_make_border_3d": "mat_ops",
    "copy_cut_border": "mat_ops",
    "copy_cut_border_3d": "mat_ops",
    "convert_packing": "mat_ops",
    "flatten": "mat_ops",
    "BorderType": "mat_ops",
    "resize_nearest": "mat_ops",
    "resize_bilinear": "mat_ops",
    "resize_bicubic": "mat_ops",
    "cast_float32_to_float16": "mat_ops",
    "cast_float16_to_float32": "mat_ops",
    "cast_int8_to_float32": "mat_ops",
    "cast_float32_to_bfloat16": "mat_ops",
    "cast_bfloat16_to_float32": "mat_ops",
    "quantize_to_int8": "mat_ops",
    "VkAllocator": "gpu.vkallocator",
    "VkBlobAllocator": "gpu.vkallocator",
    "VkWeightAllocator": "gpu.vkallocator",
    "VkStagingAllocator": "gpu.vkallocator",
    "VkWeightStagingAllocator": "gpu.vkallocator",
    "VkBufferMemory": "gpu.vkallocator",
    "VkImageMemory": "gpu.vkallocator",
}
_EXPORTS.update(
    dict.fromkeys(
        (
            "get_cpu_count",
            "get_little_cpu_count",
            "get_big_cpu_count",
            "get_physical_cpu_count",
            "get_physical_little_cpu_count",
            "get_physical_big_cpu_count",
            "cpu_support_x86_avx",
            "cpu_support_x86_avx2",
            "cpu_support_arm_neon",
            "cpu_support_arm_vfpv4",
            "cpu_support_arm_asimdhp",
            "get_cpu_powersave",
            "set_cpu_powersave",
            "get_omp_num_threads",
            "set_omp_num_threads",
            "get_omp_dynamic",
            "set_omp_dynamic",
            "get_omp_thread_num",
            "get_kmp_blocktime",
            "set_kmp_blocktime",
        ),
        "cpu",
    )
)

__all__ = sorted(_EXPORTS) + ["__version__"]

# subpackages of the PyPI package, imported on first use as ``ncnn_c.model_zoo``
_SUBMODULES = ("model_zoo", "utils")

if TYPE_CHECKING:
    # the names __getattr__ resolves, for type checkers and IDEs (``X as X``: re-exported)
    from .allocator import Allocator as Allocator
    from .allocator import PoolAllocator as PoolAllocator
    from .allocator import UnlockedPoolAllocator as UnlockedPoolAllocator
    from .cpu import cpu_support_arm_asimdhp as cpu_support_arm_asimdhp
    from .cpu import cpu_support_arm_neon as cpu_support_arm_neon
    from .cpu import cpu_support_arm_vfpv4 as cpu_support_arm_vfpv4
    from .cpu import cpu_support_x86_avx as cpu_support_x86_avx
    from .cpu import cpu_support_x86_avx2 as cpu_support_x86_avx2
    from .cpu import get_big_cpu_count as get_big_cpu_count
    from .cpu import get_cpu_count as get_cpu_count
    from .cpu import get_cpu_powersave as get_cpu_powersave
    from .cpu import get_kmp_blocktime as get_kmp_blocktime
    from .cpu import get_little_cpu_count as get_little_cpu_count
    from .cpu import get_omp_dynamic as get_omp_dynamic
    from .cpu import get_omp_num_threads as get_omp_num_threads
    from .cpu import get_omp_thread_num as get_omp_thread_num
    from .cpu import get_physical_big_cpu_count as get_physical_big_cpu_count
    from .cpu import get_physical_cpu_count as get_physical_cpu_count
    from .cpu import get_physical_little_cpu_count as get_physical_little_cpu_count
    from .cpu import set_cpu_powersave as set_cpu_powersave
    from .cpu import set_kmp_blocktime as set_kmp_blocktime
    from .cpu import set_omp_dynamic as set_omp_dynamic
    from .cpu import set_omp_num_threads as set_omp_num_threads
    from .datareader import DataReader as DataReader
    from .datareader import DataReaderFromEmpty as DataReaderFromEmpty
    from .datareader import DataReaderFromMemory as DataReaderFromMemory
    from .datareader import DataReaderFromStdio as DataReaderFromStdio
    from .gpu.command import VkCompute as VkCompute
    from .gpu.device import GpuInfo as GpuInfo
    from .gpu.device import VulkanDevice as VulkanDevice
    from .gpu.device import create_gpu_instance as create_gpu_instance
    from .gpu.device import destroy_gpu_instance as destroy_gpu_instance
    from .gpu.device import get_default_gpu_index as get_default_gpu_index
    from .gpu.device import get_gpu_count as get_gpu_count
    from .gpu.device import get_gpu_device as get_gpu_device
    from .gpu.device import get_gpu_info as get_gpu_info
    from .gpu.device import start_gpu_device as start_gpu_device
    from .gpu.pipeline import Pipeline as Pipeline
    from .gpu.pipelinecache import PipelineCache as PipelineCache
    from .gpu.vkallocator import VkAllocator as VkAllocator
    from .gpu.vkallocator import VkBlobAllocator as VkBlobAllocator
    from .gpu.vkallocator import VkBufferMemory as VkBufferMemory
    from .gpu.vkallocator import VkImageMemory as VkImageMemory
    from .gpu.vkallocator import VkStagingAllocator as VkStagingAllocator
    from .gpu.vkallocator import VkWeightAllocator as VkWeightAllocator
    from .gpu.vkallocator import VkWeightStagingAllocator as VkWeightStagingAllocator
    from .gpu.vkmat import VkMat as VkMat
    from .layer import Layer as Layer
    from .layer import create_layer as create_layer
    from .layer import layer_to_index as layer_to_index
    from .mat import Mat as Mat
    from .mat_ops import BorderType as BorderType
    from .mat_ops import cast_bfloat16_to_float32 as cast_bfloat16_to_float32
    from .mat_ops import cast_float16_to_float32 as cast_float16_to_float32
    from .mat_ops import cast_float32_to_bfloat16 as cast_float32_to_bfloat16
    from .mat_ops import cast_float32_to_float16 as cast_float32_to_float16
    from .mat_ops import cast_int8_to_float32 as cast_int8_to_float32
    from .mat_ops import convert_packing as convert_packing
    from .mat_ops import copy_cut_border as copy_cut_border
    from .mat_ops import copy_cut_border_3d as copy_cut_border_3d
    from .mat_ops import copy_make_border as copy_make_border
    from .mat_ops import copy_make_border_3d as copy_make_border_3d
    from .mat_ops import flatten as flatten
    from .mat_ops import quantize_to_int8 as quantize_to_int8
    from .mat_ops import resize_bicubic as resize_bicubic
    from .mat_ops import resize_bilinear as resize_bilinear
    from .mat_ops import resize_nearest as resize_nearest
    from .modelbin import ModelBin as ModelBin
    from .modelbin import ModelBinFromDataReader as ModelBinFromDataReader
    from .modelbin import ModelBinFromMatArray as ModelBinFromMatArray
    from .net import Blob as Blob
    from .net import Extractor as Extractor
    from .net import Net as Net
    from .option import Option as Option
    from .paramdict import ParamDict as ParamDict


def __getattr__(name: str):
    if name == "ncnn":
        # the PyPI package's names live in its extension module ``ncnn.ncnn``; ours, here
        import sys

        return sys.modules[__name__]
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'ncnn_c' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__():
    return [*__all__, "ncnn", *_SUBMODULES]
