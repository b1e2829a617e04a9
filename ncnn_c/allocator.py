"""CPU memory allocators, shaped like ncnn's ``Allocator`` / ``PoolAllocator``.

Memory is handed out as 1-D ``numpy.uint8`` arrays whose first byte is aligned to
``MALLOC_ALIGN`` bytes, so numpy views over them (and raw pointers handed to C users)
see the same alignment ncnn guarantees. A pool keeps two lists, as ncnn's does:
``budgets`` (free blocks, ``(size, buffer)``) and ``payouts`` (blocks in use). Blocks are
matched by identity of the array returned from ``fastMalloc``.

``Mat`` gives a block back through ``fastFree`` when the last Mat (or numpy view made
by a Mat) over it is gone, see ``mat/storage.py``.
"""

from __future__ import annotations

import contextlib
import logging
import threading

import numpy as np

log = logging.getLogger("ncnn_c")

# ncnn aligns to 64 bytes (AVX-512 / cache line) and over-allocates so that SIMD
# kernels may read a little past the end; keep both so C users can rely on them.
MALLOC_ALIGN = 64
MALLOC_OVERREAD = 64


def fast_malloc(size: int) -> np.ndarray:
    """An uninitialised, ``MALLOC_ALIGN``-aligned uint8 array of exactly ``size`` bytes."""
    size = int(size)
    if size < 0:
        raise ValueError(f"fast_malloc: negative size {size}")
    raw = np.empty(size + MALLOC_ALIGN + MALLOC_OVERREAD, dtype=np.uint8)
    offset = (-raw.__array_interface__["data"][0]) % MALLOC_ALIGN
    return raw[offset : offset + size]


def _address(buf) -> int:
    try:
        return int(buf.__array_interface__["data"][0])
    except (AttributeError, KeyError, TypeError):
        return 0


class Allocator:
    """Plain allocator: every ``fastMalloc`` is a fresh aligned array, ``fastFree`` lets it go.

    Subclass and override both methods for a custom allocator; ``fastMalloc`` must return a
    writable buffer (preferably a 1-D uint8 numpy array) of at least ``size`` bytes.
    """

    def fastMalloc(self, size: int) -> np.ndarray:
        return fast_malloc(size)

    def fastFree(self, buf) -> None:
        # Memory is garbage-collected; nothing to do for the plain allocator.
        return None


class _BasePoolAllocator(Allocator):
    """The budgets/payouts pool shared by the locked and unlocked variants."""

    def __init__(self, locked: bool) -> None:
        # ncnn keeps the ratio as an integer in 0..256 and compares with a shift;
        # we keep the same integer so reuse decisions match ncnn's exactly.
        self._size_compare_ratio = 192  # 0.75 * 256
        self._size_drop_threshold = 10
        self.budgets: list[tuple[int, np.ndarray]] = []
        self.payouts: list[tuple[int, np.ndarray]] = []
        # Re-entrant: a Mat's block may be given back by the garbage collector (a finaliser)
        # while this same thread is inside fastMalloc holding a lock.
        self._budgets_lock = threading.RLock() if locked else contextlib.nullcontext()
        self._payouts_lock = threading.RLock() if locked else contextlib.nullcontext()

    def set_size_compare_ratio(self, scr: float) -> None:
        """A free block of size ``bs`` is reused for ``size`` when ``bs >= size >= bs*scr``."""
        try:
            scr = float(scr)
        except (TypeError, ValueError):
            raise TypeError(f"set_size_compare_ratio: expected a float, got {scr!r}") from None
        if not 0.0 <= scr <= 1.0:
            log.error("set_size_compare_ratio: invalid size compare ratio %r, must be in 0..1", scr)
            return
        self._size_compare_ratio = int(scr * 256)

    def set_size_drop_threshold(self, threshold: int) -> None:
        """Once this many free blocks are kept, a miss drops the smallest or largest one."""
        threshold = int(threshold)
        if threshold < 0:
            log.error("set_size_drop_threshold: invalid threshold %d", threshold)
            return
        self._size_drop_threshold = threshold

    @property
    def size_compare_ratio(self) -> float:
        return self._size_compare_ratio / 256.0

    @property
    def size_drop_threshold(self) -> int:
        return self._size_drop_threshold

    def clear(self) -> None:
        """Release every free block (blocks in use stay with their Mats)."""
        with self._budgets_lock:
            self.budgets.clear()

    def fastMalloc(self, size: int) -> np.ndarray:
        size = int(size)
        if size < 0:
            raise ValueError(f"fastMalloc: negative size {size}")
        with self._budgets_lock:
            chosen = None
            min_i = max_i = -1
            for i, (bs, _buf) in enumerate(self.budgets):
                if bs >= size and ((bs * self._size_compare_ratio) >> 8) <= size:
                    chosen = i
                    break
                if min_i < 0 or bs < self.budgets[min_i][0]:
                    min_i = i
                if max_i < 0 or bs > self.budgets[max_i][0]:
                    max_i = i
            if chosen is not None:
                bs, buf = self.budgets.pop(chosen)
                with self._payouts_lock:
                    self.payouts.append((bs, buf))
                return buf
            # Nothing fits: if the pool is full, drop the block least likely to fit
            # future requests of this size, so the pool follows the working set.
            if self.budgets and len(self.budgets) >= self._size_drop_threshold:
                if self.budgets[max_i][0] < size:
                    self.budgets.pop(min_i)
                elif self.budgets[min_i][0] > size:
                    self.budgets.pop(max_i)
        buf = fast_malloc(size)
        with self._payouts_lock:
            self.payouts.append((size, buf))
        return buf

    def fastFree(self, buf) -> None:
        with self._payouts_lock:
            found = None
            for i, (_bs, b) in enumerate(self.payouts):
                if b is buf:
                    found = i
                    break
            if found is None:
                # A view of the same block (same start address and length) is accepted too,
                # so callers holding a re-wrapped array can still give it back.
                addr = _address(buf)
                for i, (_bs, b) in enumerate(self.payouts):
                    if addr and _address(b) == addr:
                        found = i
                        break
            if found is None:
                log.error(
                    "%s: fastFree of a buffer this pool never gave out (0x%x)",
                    type(self).__name__,
                    _address(buf),
                )
                return
            entry = self.payouts.pop(found)
        with self._budgets_lock:
            self.budgets.append(entry)

    def __del__(self) -> None:
        # Mats keep their allocator alive, so outstanding payouts here mean a caller
        # fastMalloc'ed by hand and never freed.
        try:
            if self.payouts:
                log.error(
                    "%s destroyed with %d block(s) still in use", type(self).__name__, len(self.payouts)
                )
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass


class PoolAllocator(_BasePoolAllocator):
    """Thread-safe pool (one lock for budgets, one for payouts)."""

    def __init__(self) -> None:
        super().__init__(locked=True)


class UnlockedPoolAllocator(_BasePoolAllocator):
    """The same pool without locks, for use from one thread at a time."""

    def __init__(self) -> None:
        super().__init__(locked=False)
