"""Device memory allocators (ncnn's VkAllocator family).

Vulkan allocations are slow and limited in number (``maxMemoryAllocationCount`` can be as
low as 4096), so every allocator here carves sub-ranges out of large blocks (one VkBuffer
bound to one VkDeviceMemory each) and hands out ``VkBufferMemory`` = (buffer, offset,
capacity). Freed ranges go back to their block's free list and are reused; a block is only
destroyed by ``clear()`` (or when a one-off oversized staging block becomes free).
"""

from __future__ import annotations

import bisect
import logging
import threading

from . import _vk

log = logging.getLogger("ncnn_c")

_USAGE = _vk.BUFFER_STORAGE | _vk.BUFFER_TRANSFER_SRC | _vk.BUFFER_TRANSFER_DST


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


class VkBufferMemory:
    """A range of a device buffer: what a VkMat points at."""

    __slots__ = ("buffer", "offset", "capacity", "memory", "mapped_ptr", "refcount", "_block", "__weakref__")

    def __init__(
        self, buffer, offset: int, capacity: int, memory, mapped_ptr: int | None, block=None
    ) -> None:
        self.buffer = buffer
        self.offset = offset
        self.capacity = capacity
        self.memory = memory
        self.mapped_ptr = mapped_ptr
        # ncnn counts the VkMats sharing a range here; ours are kept alive by Python references
        self.refcount = 0
        self._block = block

    def __repr__(self) -> str:
        mapped = f" mapped=0x{self.mapped_ptr:x}" if self.mapped_ptr else ""
        return f"<VkBufferMemory offset={self.offset} capacity={self.capacity}{mapped}>"


class VkImageMemory:
    """What ncnn's ``fastMalloc(w, h, c, elemsize, elempack)`` returns: ``width`` x ``height``
    x ``depth`` texels.

    ncnn_c computes on storage buffers only and creates no VkImage: the texels are a range of
    the allocator's buffer memory (``_range``, a VkBufferMemory), reserved until ``fastFree``.
    """

    __slots__ = ("width", "height", "depth", "refcount", "_range", "__weakref__")

    def __init__(self, width: int = 0, height: int = 0, depth: int = 0) -> None:
        self.width = width
        self.height = height
        self.depth = depth
        self.refcount = 0
        self._range: VkBufferMemory | None = None

    def __repr__(self) -> str:
        return f"<VkImageMemory {self.width}x{self.height}x{self.depth}>"


class _Block:
    __slots__ = ("buffer", "memory", "size", "mapped", "free", "used", "type_index")

    def __init__(self, buffer, memory, size: int, mapped: int | None, type_index: int) -> None:
        self.buffer = buffer
        self.memory = memory
        self.size = size
        self.mapped = mapped
        self.type_index = type_index
        self.free = [(0, size)]  # sorted (offset, size) ranges
        self.used = 0

    def take(self, size: int) -> int | None:
        # best fit keeps big holes for big blobs
        best = -1
        for i, (_, s) in enumerate(self.free):
            if s >= size and (best < 0 or s < self.free[best][1]):
                best = i
                if s == size:
                    break
        if best < 0:
            return None
        off, s = self.free[best]
        if s == size:
            del self.free[best]
        else:
            self.free[best] = (off + size, s - size)
        self.used += size
        return off

    def give(self, off: int, size: int) -> None:
        self.used -= size
        i = bisect.bisect_left(self.free, (off, 0))
        # merge with the following and the preceding hole
        if i < len(self.free) and off + size == self.free[i][0]:
            size += self.free[i][1]
            del self.free[i]
        if i > 0 and self.free[i - 1][0] + self.free[i - 1][1] == off:
            off = self.free[i - 1][0]
            size += self.free[i - 1][1]
            i -= 1
            del self.free[i]
        self.free.insert(i, (off, size))


class VkAllocator:
    """Base class: ``fastMalloc(size) -> VkBufferMemory | None``, ``fastFree(bm)``, ``clear()``."""

    memory_kind = "blob"  # which memory type family VulkanDevice.find_memory_type picks

    def __init__(self, vkdev) -> None:
        self.vkdev = vkdev
        self.mappable = False
        self.coherent = False
        self._lock = threading.Lock()
        self._alive = True
        # ranges whose VkMat was finalised while the lock was taken (free_from_finalizer)
        self._deferred: list = []
        vkdev._register_allocator(self)

    def fastMalloc(self, size: int):
        raise NotImplementedError

    @property
    def buffer_memory_type_index(self) -> int:
        """Vulkan memory type of this allocator's buffers (-1 before any is chosen)."""
        return int(getattr(self, "type_index", -1))

    @property
    def image_memory_type_index(self) -> int:
        """Vulkan memory type of this allocator's image memory (-1: it has none)."""
        return -1

    def fastFree(self, bm) -> None:
        raise NotImplementedError

    def free_from_finalizer(self, bm) -> None:
        """fastFree for a finalizer (``VkMat.__del__``). The garbage collector can run one inside
        this allocator's own critical section (a fastMalloc allocating Python objects), where
        waiting for the lock would wait for the thread itself: so never wait here. When the lock
        is taken, the range is queued and the next fastMalloc, fastFree or clear frees it."""
        if self._lock.acquire(blocking=False):
            self._lock.release()
            self.fastFree(bm)
        else:
            self._deferred.append(bm)

    def clear(self) -> None:
        pass

    def _device_destroyed(self) -> None:
        """The device is going away: free what we can, and make later frees no-ops."""
        with self._lock:
            self._destroy_all()
            self._alive = False

    def _destroy_all(self) -> None:
        pass

    def __del__(self) -> None:
        try:
            if self._alive:
                with self._lock:
                    self._destroy_all()
                    self._alive = False
        except Exception:  # interpreter shutdown: modules may already be gone
            pass


class VkBlobAllocator(VkAllocator):
    """Sub-allocates device-local memory in blocks of ``block_size`` bytes (16 MiB default)."""

    block_size = 16 << 20
    keep_oversize = True

    def __init__(
        self, vkdev, preferred_block_size: int | None = None, host_visible: bool | None = None
    ) -> None:
        """``host_visible=False`` leaves blocks unmapped even on unified memory, so uploads and
        downloads take the staging path a discrete GPU takes (used by tests)."""
        super().__init__(vkdev)
        if preferred_block_size:
            self.block_size = preferred_block_size
        self.alignment = max(vkdev.info.buffer_offset_alignment, 16)
        self.blocks: list[_Block] = []
        self.type_index, self._type_flags = vkdev.memory_type_for(self.memory_kind)
        self._host_visible = host_visible
        self._set_flags(self._type_flags)

    def _set_flags(self, flags: int) -> None:
        """``mappable`` / ``coherent`` from the memory type in use. They are public and settable
        (ncnn's fields), but a block is mapped only when its memory really is host visible: as
        in ncnn, the type's own properties are put back when a block is made."""
        self.mappable = bool(flags & _vk.MEMORY_HOST_VISIBLE) and self._host_visible is not False
        self.coherent = bool(flags & _vk.MEMORY_HOST_COHERENT)

    def _new_block(self, size: int) -> _Block:
        dev = self.vkdev.vk_device
        buf = _vk.create_buffer(dev, size, _USAGE)
        try:
            req_size, _, bits = _vk.buffer_memory_requirements(dev, buf)
            type_index, flags = self.type_index, self._type_flags
            if not bits & (1 << type_index):
                type_index, flags = self.vkdev.memory_type_for(self.memory_kind, bits)
            mem = _vk.allocate_memory(dev, req_size, type_index)
        except Exception:
            _vk.destroy_buffer(dev, buf)
            raise
        try:
            _vk.bind_buffer_memory(dev, buf, mem, 0)
            self._set_flags(flags)
            mapped = _vk.map_memory(dev, mem) if self.mappable else None
        except Exception:
            _vk.destroy_buffer(dev, buf)
            _vk.free_memory(dev, mem)
            raise
        block = _Block(buf, mem, size, mapped, type_index)
        self.blocks.append(block)
        return block

    def _free_block(self, block: _Block) -> None:
        dev = self.vkdev.vk_device
        if block.mapped:
            _vk.unmap_memory(dev, block.memory)
        _vk.destroy_buffer(dev, block.buffer)
        _vk.free_memory(dev, block.memory)

    # elempacks ncnn's fastMalloc(w, h, c, elemsize, elempack) accepts (None: any)
    image_elempacks: tuple[int, ...] | None = (1, 4, 8)

    @property
    def image_memory_type_index(self) -> int:
        """The memory type image memory comes from: this allocator's buffer memory, since
        ncnn_c's images are buffer ranges (see VkImageMemory)."""
        return self.buffer_memory_type_index

    def _image(self, w: int, h: int, c: int, elemsize: int, elempack: int) -> VkImageMemory | None:
        """ncnn's ``fastMalloc(w, h, c, elemsize, elempack)``: ``w*h*c`` texels of ``elemsize``
        bytes, as a range of buffer memory (ncnn_c binds no VkImage)."""
        if self.image_elempacks is not None and elempack not in self.image_elempacks:
            log.error("VkAllocator.fastMalloc: image elempack must be one of %s", self.image_elempacks)
            return None
        size = int(w) * int(h) * int(c) * int(elemsize)
        if size <= 0:
            log.error("VkAllocator.fastMalloc: empty image %dx%dx%d", w, h, c)
            return None
        bm = self.fastMalloc(size)
        if bm is None:
            return None
        img = VkImageMemory(int(w), int(h), int(c))
        img._range = bm
        return img

    def fastMalloc(self, size: int, *image_shape: int):
        if image_shape:
            if len(image_shape) != 4:
                raise TypeError("fastMalloc(size) or fastMalloc(w, h, c, elemsize, elempack)")
            return self._image(size, *image_shape)
        size = _align(max(int(size), 4), self.alignment)
        with self._lock:
            if not self._alive:
                log.error("VkAllocator.fastMalloc: the device was destroyed")
                return None
            self._free_deferred()
            for block in self.blocks:
                if block.size - block.used >= size:
                    off = block.take(size)
                    if off is not None:
                        return self._memory(block, off, size)
            try:
                block = self._new_block(max(size, self.block_size))
            except _vk.VulkanError as e:
                log.error("VkAllocator.fastMalloc(%d): %s", size, e)
                return None
            off = block.take(size)
            assert off is not None  # a fresh block of at least ``size`` bytes always fits it
            return self._memory(block, off, size)

    def _memory(self, block: _Block, off: int, size: int) -> VkBufferMemory:
        mapped = block.mapped + off if block.mapped else None
        return VkBufferMemory(block.buffer, off, size, block.memory, mapped, block)

    def fastFree(self, bm) -> None:
        with self._lock:
            self._free_deferred()
            self._free_locked(bm)

    def _free_deferred(self) -> None:
        """Free what finalizers queued (the lock is held)."""
        while self._deferred:
            self._free_locked(self._deferred.pop())

    def _free_locked(self, bm) -> None:
        if isinstance(bm, VkImageMemory):
            img = bm
            bm, img._range = img._range, None
        if bm is None:
            return
        block = bm._block
        if not self._alive or block is None:
            return
        bm._block = None  # a second free of the same range must not corrupt the free list
        block.give(bm.offset, bm.capacity)
        if block.used == 0 and block.size > self.block_size and not self.keep_oversize:
            self.blocks.remove(block)
            self._free_block(block)

    def clear(self) -> None:
        """Destroy every block with nothing allocated in it."""
        with self._lock:
            if not self._alive:
                return
            self._free_deferred()
            keep = []
            for block in self.blocks:
                if block.used == 0:
                    self._free_block(block)
                else:
                    keep.append(block)
            self.blocks = keep

    def _destroy_all(self) -> None:
        for block in self.blocks:
            self._free_block(block)
        self.blocks = []

    def stats(self) -> dict:
        with self._lock:
            return {
                "blocks": len(self.blocks),
                "bytes": sum(b.size for b in self.blocks),
                "used": sum(b.used for b in self.blocks),
            }


class VkWeightAllocator(VkBlobAllocator):
    """Device-local memory for weights: written once by upload_model, freed with the net."""

    memory_kind = "weight"
    block_size = 8 << 20
    image_elempacks = (1, 4, 8, 16, 32, 64)


class VkStagingAllocator(VkBlobAllocator):
    """Host-visible coherent memory for upload/download staging copies."""

    memory_kind = "staging"
    block_size = 16 << 20
    keep_oversize = False  # a 100 MB weight staging buffer should not outlive its upload
    size_compare_ratio = 0.75
    image_elempacks = None  # ncnn's staging images are plain host memory of any packing

    def set_size_compare_ratio(self, scr: float) -> None:
        """ncnn's reuse threshold for staging buffers; sub-allocation here makes it advisory."""
        scr = float(scr)
        if not 0.0 <= scr <= 1.0:
            log.error("VkStagingAllocator.set_size_compare_ratio: %g not in [0, 1]", scr)
            return
        self.size_compare_ratio = scr


class VkWeightStagingAllocator(VkStagingAllocator):
    """Staging memory used while uploading weights (a separate pool, as ncnn)."""

    def _image(self, w: int, h: int, c: int, elemsize: int, elempack: int) -> VkImageMemory | None:
        return None  # ncnn's weight staging allocator hands out no images either
