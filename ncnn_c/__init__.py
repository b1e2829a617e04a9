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
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'ncnn_c' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
