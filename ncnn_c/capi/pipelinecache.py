"""Vulkan pipeline caches: create, clear, size, load/save to memory and files; and our own
``ncnn_pipelinecache_last_error`` (declared in ``c_api_ext.h``)."""

from __future__ import annotations

import ctypes
from typing import Any

from ._core import (
    HANDLES,
    INT,
    PIPELINECACHE,
    PTR,
    SIZE,
    STR,
    VOID,
    _address,
    _bytes_at,
    _destroy,
    _export,
    _get,
    _is_address,
    _text_arg,
    log,
)


@_export(PTR)
def ncnn_pipelinecache_create(device_index: int) -> int:
    from ..gpu.device import get_gpu_count, get_gpu_device
    from ..gpu.pipelinecache import PipelineCache

    count = get_gpu_count()
    if not 0 <= device_index < count:
        raise ValueError(f"no Vulkan device {device_index} ({count} found)")
    return HANDLES.add(PIPELINECACHE, PipelineCache(get_gpu_device(device_index)))


@_export(VOID)
def ncnn_pipelinecache_destroy(pipelinecache: int) -> None:
    _destroy(pipelinecache, PIPELINECACHE)


@_export(VOID)
def ncnn_pipelinecache_clear(pipelinecache: int) -> None:
    _get(pipelinecache, PIPELINECACHE).clear()


@_export(SIZE)
def ncnn_pipelinecache_get_size(pipelinecache: int) -> int:
    return int(_get(pipelinecache, PIPELINECACHE).size())


@_export(INT)
def ncnn_pipelinecache_load_memory(pipelinecache: int, data: Any, size: int | None = None) -> int:
    pc = _get(pipelinecache, PIPELINECACHE)
    if size is None:
        size = len(memoryview(data).cast("B"))
    return int(pc.load_cache(_bytes_at(data, int(size), "load_memory")))


@_export(INT)
def ncnn_pipelinecache_save_memory(pipelinecache: int, data: Any = None, size: Any = None) -> Any:
    """C form ``(pc, data_addr, size_addr)``: with ``data`` 0 store the needed size in
    ``*size`` and return 0; else copy when ``*size`` is large enough (0), or return -1 and
    store the needed size. Python form ``(pc)``: the bytes, or None on failure."""
    if data is None and size is None:
        return _save_memory_bytes(pipelinecache)
    pc = _get(pipelinecache, PIPELINECACHE)
    out = bytearray()
    ret = pc.save_cache(out)
    if not _is_address(size) or size == 0:
        raise ValueError("size must point to a size_t")
    if ret != 0:
        return int(ret)
    cell = ctypes.c_size_t.from_address(_address(size, "size"))
    if not data:
        cell.value = len(out)
        return 0
    if cell.value < len(out):
        log.error("ncnn_pipelinecache_save_memory: buffer of %d bytes, %d needed", cell.value, len(out))
        cell.value = len(out)
        return -1
    ctypes.memmove(_address(data, "data"), bytes(out), len(out))
    cell.value = len(out)
    return 0


def _save_memory_bytes(pipelinecache: int) -> bytes | None:
    try:
        out = bytearray()
        ret = _get(pipelinecache, PIPELINECACHE).save_cache(out)
        if ret != 0:
            log.error("ncnn_pipelinecache_save_memory: save_cache returned %d", ret)
            return None
        return bytes(out)
    except Exception as e:  # the Python form reports failure as None, never raises
        log.error("ncnn_pipelinecache_save_memory: %s", e)
        return None


@_export(INT)
def ncnn_pipelinecache_load(pipelinecache: int, path: Any) -> int:
    return int(_get(pipelinecache, PIPELINECACHE).load_cache(_text_arg(path, "path")))


@_export(INT)
def ncnn_pipelinecache_save(pipelinecache: int, path: Any) -> int:
    return int(_get(pipelinecache, PIPELINECACHE).save_cache(_text_arg(path, "path")))


# -- ncnn_c extensions (declared in c_api_ext.h, not in ncnn's c_api.h) ---------------------


@_export(STR)
def ncnn_pipelinecache_last_error(pipelinecache: int) -> str | None:
    """Why the last load (``ncnn_pipelinecache_load`` / ``_load_memory``) was rejected: the
    field, what was expected and what was found; NULL after a successful load or before any."""
    return _get(pipelinecache, PIPELINECACHE).last_error
