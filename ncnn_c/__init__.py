"""ncnn_c: ncnn-compatible inference (numpy on the CPU, Vulkan compute on the GPU).

``import ncnn_c as ncnn`` gives the names of the PyPI ``ncnn`` package. Names are
resolved lazily so that importing the package does not load Vulkan or the shader
compiler until a GPU name is first used.
"""

from __future__ import annotations

import importlib
import logging

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


def __getattr__(name: str):
    if name == "ncnn":
        # the PyPI package's names live in its extension module ``ncnn.ncnn``; ours, here
        import sys

        return sys.modules[__name__]
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'ncnn_c' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__():
    return [*__all__, "ncnn"]
