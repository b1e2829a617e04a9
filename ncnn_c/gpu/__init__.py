"""The Vulkan side of ncnn_c: devices, memory, command recording, shaders and pipelines.

Importing this package loads nothing native; the Vulkan loader is opened on first use
(``get_gpu_count()`` and friends), and returns 0 GPUs when it is missing.
"""

from __future__ import annotations

from .device import (  # noqa: F401
    GpuInfo,
    VulkanDevice,
    create_gpu_instance,
    destroy_gpu_instance,
    get_default_gpu_index,
    get_gpu_count,
    get_gpu_device,
    get_gpu_info,
)
