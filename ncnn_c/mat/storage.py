"""Mat storage: one flat, aligned byte buffer per Mat, from an allocator or foreign memory.

Storage obtained from an allocator is wrapped in a ``_Block`` that every numpy view over it
references (numpy keeps the first non-array base alive), so the block goes back to its
allocator only when the last Mat *and* the last view are gone.
"""

from __future__ import annotations

import logging
import weakref

import numpy as np

from ..allocator import fast_malloc

log = logging.getLogger("ncnn_c")


def alignSize(sz: int, n: int) -> int:
    """``sz`` rounded up to a multiple of ``n`` (a power of two), as ncnn's alignSize."""
    return (int(sz) + n - 1) & -n


class _Block:
    """Root object of one allocation; numpy views reference it through ``__array_interface__``.

    ``buf`` is what the allocator handed out (given back to it when the block dies),
    ``owner`` keeps foreign memory (``from_external``) alive.
    """

    def __init__(self, nbytes: int, address: int, allocator=None, buf=None, owner=None) -> None:
        self.buf = buf
        self.owner = owner
        self.__array_interface__ = {
            "shape": (int(nbytes),),
            "typestr": "|u1",
            "data": (int(address), False),
            "version": 3,
        }
        if allocator is not None:
            weakref.finalize(self, _give_back, allocator, buf)


def _give_back(allocator, buf) -> None:
    try:
        allocator.fastFree(buf)
    except Exception:  # noqa: BLE001 - a finaliser must not raise
        log.exception("Mat: allocator.fastFree failed")


def _as_byte_buffer(buf, nbytes: int) -> np.ndarray:
    """Whatever a (possibly user-written) allocator returned, as a writable uint8 array."""
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            raise MemoryError("allocator returned a non-contiguous array")
        arr = buf.reshape(-1).view(np.uint8)
    else:
        arr = np.frombuffer(buf, dtype=np.uint8)
    if arr.nbytes < nbytes:
        raise MemoryError(f"allocator returned {arr.nbytes} bytes, {nbytes} requested")
    if not arr.flags.writeable:
        raise MemoryError("allocator returned a read-only buffer")
    return arr


def _allocate(nbytes: int, allocator) -> np.ndarray | None:
    """A 1-D uint8 storage array of ``nbytes`` bytes (None, logged, if the allocation failed:
    the Mat stays empty, as ncnn's does when its fastMalloc returns NULL)."""
    if allocator is None:
        try:
            return fast_malloc(nbytes)
        except MemoryError as e:
            log.error("Mat: allocation of %d bytes failed: %s", nbytes, e)
            return None
    request = alignSize(nbytes, 4)
    buf = None
    try:
        buf = allocator.fastMalloc(request)
        if buf is None:
            raise MemoryError("allocator returned None")
        arr = _as_byte_buffer(buf, nbytes)
    except (MemoryError, TypeError, ValueError) as e:
        log.error("Mat: allocation of %d bytes failed: %s", nbytes, e)
        if buf is not None:
            _give_back(allocator, buf)  # unusable, but the allocator still counts it as lent
        return None
    block = _Block(nbytes, arr.__array_interface__["data"][0], allocator=allocator, buf=buf)
    return np.asarray(block)
