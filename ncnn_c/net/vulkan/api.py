"""The one door from the net to the GPU modules (``ncnn_c.gpu``, ``layer/vulkan``).

Every name of theirs that the Vulkan backend uses is reached through ``_gpu()`` (a
``GpuApi``) or ``_devices()`` (a ``DeviceApi``), imported on first use, so a CPU-only run
never imports ``ncnn_c.gpu`` nor ``vulkan``; tests replace these two functions with complete
stand-ins.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, NamedTuple

from ...option import Option
from ..view import NetView

log = logging.getLogger("ncnn_c")


class GpuApi(NamedTuple):
    """Every name of the GPU modules that the Net and the Vulkan executor use. All fields
    are required, so a stand-in (tests) is complete: production code never asks what it has."""

    get_gpu_count: Callable[[], int]
    get_default_gpu_index: Callable[[], int]
    get_gpu_device: Callable[..., Any]
    PipelineCache: Callable[..., Any]
    Pipeline: Callable[..., Any]
    VkCompute: Callable[..., Any]
    VkMat: Callable[..., Any]
    effective_flags: Callable[..., dict]  # the shader option flags a device can honour
    host_view: Callable[[int, int], Any]  # a writable view of mapped device memory
    LOCAL_1D: tuple[int, int, int]  # the layout conversion's local size
    without_shader_bits: Callable[[Option], Option]
    is_fp16: Callable[[Any], bool]  # a VkMat's storage type
    storage_fp16: Callable[[Option, Any], bool]  # the storage type of blobs on a device
    preferred_elempack: Callable[[Any, Option], int]
    record_convert: Callable[..., None]  # (cmd, pipeline, src, dst, elempack, fp16, opt)


class DeviceApi(NamedTuple):
    """The three device functions of GpuApi, for the thread that makes a net's device: they
    import ``gpu/device.py`` alone, so that the driver starts before the other GPU modules
    (pipelines, commands, the Vulkan layers) are imported, which the caller's thread then
    does while the driver works (cffi releases the GIL around its calls)."""

    get_gpu_count: Callable[[], int]
    get_default_gpu_index: Callable[[], int]
    get_gpu_device: Callable[..., Any]


@functools.cache
def _device_module() -> DeviceApi:
    from ...gpu import device

    return DeviceApi(device.get_gpu_count, device.get_default_gpu_index, device.get_gpu_device)


@functools.cache
def _gpu_modules() -> GpuApi:
    from ...gpu import _vk, command, compiler, pipeline, pipelinecache, vkmat
    from ...layer import vulkan as vklayer

    return GpuApi(
        **_device_module()._asdict(),  # GpuApi's first three fields are DeviceApi's
        PipelineCache=pipelinecache.PipelineCache,
        Pipeline=pipeline.Pipeline,
        VkCompute=command.VkCompute,
        VkMat=vkmat.VkMat,
        effective_flags=compiler.effective_flags,
        host_view=_vk.host_view,
        LOCAL_1D=vklayer.LOCAL_1D,
        without_shader_bits=vklayer.without_shader_bits,
        is_fp16=vklayer.is_fp16,
        storage_fp16=vklayer.storage_fp16,
        preferred_elempack=vklayer.preferred_elempack,
        record_convert=vklayer.record_convert,
    )


@functools.cache
def _int8_marks() -> Any:
    """layer/vulkan/_int8.py, which keeps the mark of GPU blobs holding int8 values; imported
    at first need, from the GPU paths only."""
    from ...layer.vulkan import _int8

    return _int8


def keep_fp32_before_int8(view: NetView, on_gpu: list[int], opts: list[Option]) -> None:
    """At load, before the pipelines: the GPU layers whose tops int8 layers quantize keep fp32
    storage (layer/vulkan/_int8.py, keep_fp32_before_int8)."""
    _int8_marks().keep_fp32_before_int8(view.blobs, view.layers, on_gpu, opts)


def _gpu() -> GpuApi:
    """The GPU modules, imported on first use (tests replace this function)."""
    return _gpu_modules()


def import_gpu_modules() -> None:
    """Import the GPU modules ahead of their first use, while the device is being made on
    another thread; a failure here is left for that first use to report."""
    try:
        _gpu()
    except Exception:  # noqa: BLE001 - reported again, with its context, where it matters
        log.debug("import_gpu_modules: the GPU modules did not import", exc_info=True)


def _devices() -> DeviceApi:
    """The device functions alone, imported on first use (tests replace this function with
    their ``_gpu``: a GpuApi has the same three fields)."""
    return _device_module()


def mask_device_features(opt: Option, vkdev) -> None:
    """Switch off the shader features ``vkdev`` lacks, as ncnn's Net does at load time, so
    every layer sees (and every cache key holds) what really runs."""
    for name, on in _gpu().effective_flags(opt.shader_bits(), vkdev.info).items():
        setattr(opt, name, on)
    # fp16 arithmetic without fp16 blobs is not what the user asked for (ncnn's rule)
    if not opt.use_fp16_packed and not opt.use_fp16_storage:
        opt.use_fp16_arithmetic = False


def is_cpu_device(info: Any) -> bool:
    """Whether the device of ``info`` is a CPU implementation (lavapipe)."""
    from ...layer.vulkan import is_cpu_device as cpu_device

    return cpu_device(info)
