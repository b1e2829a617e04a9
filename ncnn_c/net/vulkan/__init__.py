"""The Vulkan backend: the device, the GPU load, and the executor that records and replays.

* ``api``: the one door to ``ncnn_c.gpu`` and ``layer/vulkan`` (imported on first use);
* ``device``: the net's VulkanDevice, chosen or default, made on a thread;
* ``load``: load_model on the GPU (features masked, pipelines on a pool, uploads);
* ``forward``: ``VulkanExecutor``, the backend itself: recording, replay, the loading hooks.
"""

from __future__ import annotations

from .api import GpuApi, _gpu
from .forward import ReplayCache, VulkanExecutor

__all__ = ["GpuApi", "ReplayCache", "VulkanExecutor", "_gpu"]
