"""BlobState: what one Extractor holds between extracts, handed to whichever executor runs.

An executor (``reference``, ``native``, ``vulkan``) owns no per-inference data: it
reads and writes the blobs of the state it is given. That is what lets the Vulkan replay
snapshot a state after a recorded extract and put it back later, and the native plan check
itself on a fresh state beside the caller's.

The state is the Extractor contract's (docs/design.md), with nothing of any backend:

* ``mats`` / ``device``: each blob's host Mat, and its blob off the host (a device buffer:
  the Vulkan executor's VkMat), None where it has none. The walk (``walk.py``) reads both
  to know what is present; only the executor that made a device blob reads it.
* ``pending``: consumers of each blob that have not run yet (ncnn's light-mode refcount).
* ``shared``: blobs whose memory a caller may still hold: never modified in place.
* ``partial``: False while no blob a layer produces is present, so every plan runs whole.
* ``device_garbage``: device blobs dropped since the device last finished its queued work
  (that work may still use them).
* ``slots``: each executor's own data about this state, by the executor's key (the Vulkan
  replay's recording and lease, the native plan's key), made by the executor on first use
  (``slot``). A slot has ``changed()`` (a caller gave a blob: what the slot knew of the
  state no longer holds) and ``release()`` (the state is reset or dropped).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..mat import Mat


class Slot(Protocol):
    """An executor's own data about one BlobState."""

    def changed(self) -> None: ...

    def release(self) -> None: ...


S = TypeVar("S", bound=Slot)


class BlobState:
    """One extractor's blobs and their bookkeeping (see the module docstring)."""

    __slots__ = ("mats", "device", "pending", "shared", "partial", "device_garbage", "slots")

    def __init__(self, consumer_counts: list[int]) -> None:
        n = len(consumer_counts)
        self.mats: list[Mat | None] = [None] * n
        self.device: list[Any] = [None] * n
        self.pending = list(consumer_counts)
        self.shared: set[int] = set()
        self.partial = False
        self.device_garbage: list[Any] = []
        self.slots: dict[str, Any] = {}

    def slot(self, key: str, make: Callable[[], S]) -> S:
        """The executor ``key``'s slot of this state, made with ``make()`` on first use."""
        s = self.slots.get(key)
        if s is None:
            s = self.slots[key] = make()
        return s

    def release(self) -> None:
        """Give back what the executors' slots hold (a held recording's blobs must not be
        used any more)."""
        slots, self.slots = self.slots, {}
        for s in slots.values():
            s.release()

    def reset(self, consumer_counts: list[int]) -> None:
        """Forget every blob: the state of a fresh extractor (of the same size)."""
        self.release()
        n = len(self.mats)
        self.mats = [None] * n
        self.device = [None] * n
        self.pending = list(consumer_counts)
        self.shared.clear()
        self.device_garbage.clear()
        self.partial = False

    def give(self, index: int, mat: Mat, intermediate: bool) -> None:
        """Blob ``index`` is ``mat`` (shared, not copied), given by the caller; an
        ``intermediate`` blob (one a layer could produce) makes later plans partial."""
        m = Mat()
        m.share_from(mat)
        self.mats[index] = m
        self.device[index] = None
        self.shared.add(index)
        self.changed()  # the state no longer matches a recording's, nor a native plan's
        if intermediate:
            self.partial = True  # its producers must not run

    def changed(self, by: str | None = None) -> None:
        """Tell every slot but ``by``'s that the blobs changed under it."""
        for key, s in self.slots.items():
            if key != by:
                s.changed()

    def present(self, index: int) -> bool:
        return self.mats[index] is not None or self.device[index] is not None

    def consume(self, bottoms: list[int], light: bool) -> None:
        """A layer reading ``bottoms`` ran: in light mode a blob goes after its last reader
        (a device blob waits in ``device_garbage`` for the device to finish with it)."""
        pending = self.pending
        for b in bottoms:
            pending[b] -= 1
            if light and pending[b] <= 0:
                self.mats[b] = None
                dev = self.device[b]
                if dev is not None:
                    self.device_garbage.append(dev)
                    self.device[b] = None

    # -- snapshots ------------------------------------------------------------------------------
    def copy(self) -> BlobState:
        """The blobs and their bookkeeping, copied (the Mats themselves are shared); the
        slots are not: they belong to this state."""
        c = BlobState.__new__(BlobState)
        c.mats = list(self.mats)
        c.device = list(self.device)
        c.pending = list(self.pending)
        c.shared = set(self.shared)
        c.partial = self.partial
        c.device_garbage = []
        c.slots = {}
        return c

    def restore(self, saved: BlobState) -> None:
        """Back to the blobs and bookkeeping of ``saved`` (a ``copy()``); the slots stay."""
        self.mats, self.device = saved.mats, saved.device
        self.pending, self.shared, self.partial = saved.pending, saved.shared, saved.partial
