"""Allocators, and the blocks C code takes through ``allocator->fast_malloc``."""

from __future__ import annotations

import threading
from typing import Any

from ._core import ALLOCATOR, HANDLES, PTR, VOID, _destroy, _export, _get, log


@_export(PTR)
def ncnn_allocator_create_pool_allocator() -> int:
    from ..allocator import PoolAllocator

    return HANDLES.add(ALLOCATOR, PoolAllocator())


@_export(PTR)
def ncnn_allocator_create_unlocked_pool_allocator() -> int:
    from ..allocator import UnlockedPoolAllocator

    return HANDLES.add(ALLOCATOR, UnlockedPoolAllocator())


@_export(VOID)
def ncnn_allocator_destroy(allocator: int) -> None:
    _destroy(allocator, ALLOCATOR)


# Blocks handed to C through the allocator struct's fast_malloc, by address, until fast_free.
_c_blocks: dict[int, tuple[int, Any]] = {}
_c_blocks_lock = threading.Lock()


def allocator_fast_malloc(allocator: int, size: int) -> int:
    """Backs ``allocator->fast_malloc`` in C: an address, 0 on failure (not a c_api.h export)."""
    try:
        a = _get(allocator, ALLOCATOR)
        buf = a.fastMalloc(int(size))
        addr = int(buf.__array_interface__["data"][0]) if size else 0
        with _c_blocks_lock:
            _c_blocks[addr] = (allocator, buf)
        return addr
    except Exception as e:
        log.error("fast_malloc: %s", e)
        return 0


def allocator_fast_free(allocator: int, ptr: int) -> None:
    """Backs ``allocator->fast_free`` in C."""
    try:
        with _c_blocks_lock:
            owner, buf = _c_blocks.pop(ptr, (0, None))
        if buf is None:
            if ptr:
                log.error("fast_free: %#x was not allocated by fast_malloc", ptr)
            return
        if owner != allocator:
            log.error("fast_free: %#x belongs to allocator %#x, not %#x", ptr, owner, allocator)
        if HANDLES.alive(owner):
            _get(owner, ALLOCATOR).fastFree(buf)
    except Exception as e:
        log.error("fast_free: %s", e)
