"""VkMat: a tensor in a device buffer, with Mat's shape fields and layout (ncnn's VkMat).

The layout is exactly Mat's (see docs/design.md): channels of 3D/4D tensors start on
16-byte boundaries (``cstep``), so an upload or download is one flat byte copy.
The buffer range is returned to its allocator when the last VkMat sharing it is gone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..mat import _cstep_for, unpack_shape
from . import _vk

if TYPE_CHECKING:
    from .vkallocator import VkBufferMemory

log = logging.getLogger("ncnn_c")


class _Owner:
    """Owns one VkBufferMemory; frees it when garbage (every sharing VkMat refers to the same owner)."""

    __slots__ = ("bm", "allocator")

    def __init__(self, bm, allocator) -> None:
        self.bm = bm
        self.allocator = allocator

    def __del__(self) -> None:
        try:
            # the collector may run this inside the allocator's own locked section: never block
            free = getattr(self.allocator, "free_from_finalizer", None) or self.allocator.fastFree
            free(self.bm)
        except Exception:  # interpreter shutdown or a destroyed device: nothing left to free
            pass


def _default_allocator():
    from .device import get_gpu_device  # noqa: PLC0415 - avoid an import cycle

    dev = get_gpu_device()
    if dev is None:
        raise ValueError("VkMat.create: no allocator given and no GPU")
    return dev.default_blob_allocator


class VkMat:
    """ncnn::VkMat. Shape ``(w[, h[, d], c])``; ``elemsize``/``elempack``/``allocator`` are keywords."""

    def __init__(self, *shape, elemsize: int = 4, elempack: int = 1, allocator=None) -> None:
        self._reset()
        if shape:
            self.create(*shape, elemsize=elemsize, elempack=elempack, allocator=allocator)

    def _reset(self) -> None:
        self.dims = 0
        self.w = self.h = self.d = self.c = 0
        self.elemsize = 0
        self.elempack = 0
        self.cstep = 0
        self.allocator = None
        self.data: VkBufferMemory | None = None
        self._owner: _Owner | None = None

    # -- allocation ----------------------------------------------------------------------------
    def create(self, *args, elemsize: int = 4, elempack: int = 1, allocator=None) -> None:
        if len(args) == 1 and isinstance(args[0], (tuple, list)):
            args = tuple(args[0])
        # ncnn's C++ order create(w, ..., elemsize, elempack, allocator) passes the allocator last
        if args and hasattr(args[-1], "fastMalloc"):
            allocator, args = args[-1], args[:-1]
        if not 1 <= len(args) <= 4:
            raise TypeError(f"VkMat.create: expected 1 to 4 sizes (w, h, d, c), got {len(args)}")
        if any(int(a) < 0 for a in args) or elemsize <= 0 or elempack <= 0:
            raise ValueError(f"VkMat.create: bad shape {args} elemsize {elemsize} elempack {elempack}")
        if allocator is None:
            allocator = _default_allocator()
        dims, w, h, d, c = unpack_shape(args)
        if (
            self.data is not None
            and (self.dims, self.w, self.h, self.d, self.c) == (dims, w, h, d, c)
            and self.elemsize == elemsize
            and self.elempack == elempack
            and self.allocator is allocator
        ):
            return
        self.release()
        self.dims, self.w, self.h, self.d, self.c = dims, w, h, d, c
        self.elemsize, self.elempack = int(elemsize), int(elempack)
        self.cstep = _cstep_for(dims, w, h, d, self.elemsize)
        self.allocator = allocator
        nbytes = (self.cstep * c * self.elemsize + 3) & ~3
        if nbytes == 0:
            return
        bm = allocator.fastMalloc(nbytes)
        if bm is None:
            self._reset()
            raise MemoryError(f"VkMat.create: cannot allocate {nbytes} bytes")
        self.data = bm
        self._owner = _Owner(bm, allocator)

    def create_like(self, m, allocator=None) -> None:
        """Allocate the shape, elemsize and elempack of ``m`` (a Mat or a VkMat)."""
        if m.dims == 0:
            self.release()
            return
        shape = ((m.w,), (m.w, m.h), (m.w, m.h, m.c), (m.w, m.h, m.d, m.c))[m.dims - 1]
        self.create(*shape, elemsize=m.elemsize, elempack=m.elempack, allocator=allocator)

    def release(self) -> None:
        self._reset()

    def share_from(self, other: VkMat) -> VkMat:
        """Refer to ``other``'s buffer and shape (ncnn's operator=), no copy."""
        for k in ("dims", "w", "h", "d", "c", "elemsize", "elempack", "cstep", "allocator", "data", "_owner"):
            setattr(self, k, getattr(other, k))
        return self

    def shallow_copy(self) -> VkMat:
        return VkMat().share_from(self)

    # -- queries -------------------------------------------------------------------------------
    def empty(self) -> bool:
        return self.data is None or self.total() == 0

    def total(self) -> int:
        return self.cstep * self.c

    def elembits(self) -> int:
        return self.elemsize * 8 // self.elempack if self.elempack else 0

    def nbytes(self) -> int:
        """Bytes of the layout (cstep padding included), what an upload or download copies."""
        return self.cstep * self.c * self.elemsize

    def buffer(self):
        return self.data.buffer if self.data is not None else None

    def buffer_offset(self) -> int:
        return self.data.offset if self.data is not None else 0

    def buffer_capacity(self) -> int:
        return self.data.capacity if self.data is not None else 0

    def mapped_ptr(self) -> int | None:
        """Host address of the data when the memory is host visible, else None."""
        return self.data.mapped_ptr if self.data is not None else None

    def host_view(self):
        """A numpy uint8 view of the mapped bytes (layout size), or None if not host visible."""
        ptr = self.mapped_ptr()
        return _vk.host_view(ptr, self.nbytes()) if ptr else None

    def mapped(self):
        """A Mat over the mapped memory (no copy), or None when not host visible."""
        ptr = self.mapped_ptr()
        if not ptr:
            return None
        from ..mat import Mat  # noqa: PLC0415 - mat does not need gpu, the reverse is lazy

        shape = ((self.w,), (self.w, self.h), (self.w, self.h, self.c), (self.w, self.h, self.d, self.c))[
            self.dims - 1
        ]
        return Mat.from_external(ptr, *shape, elemsize=self.elemsize, elempack=self.elempack, owner=self)

    def __repr__(self) -> str:
        if self.dims == 0:
            return "<VkMat empty>"
        return (
            f"<VkMat dims={self.dims} w={self.w} h={self.h} d={self.d} c={self.c} "
            f"elemsize={self.elemsize} elempack={self.elempack} cstep={self.cstep}>"
        )
