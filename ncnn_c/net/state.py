"""BlobState: what one Extractor holds between extracts, handed to whichever executor runs.

An executor (``reference``, ``native``, ``vulkan_forward``) owns no per-inference data: it
reads and writes the blobs of the state it is given. That is what lets the Vulkan replay
snapshot a state after a recorded extract and put it back later, and the native plan check
itself on a fresh state beside the caller's.

* ``mats`` / ``vkmats``: each blob's host Mat and device VkMat (None: not present there).
* ``pending``: consumers of each blob that have not run yet (ncnn's light-mode refcount).
* ``shared``: blobs whose memory a caller may still hold: never modified in place.
* ``partial``: False while no blob a layer produces is present, so every plan runs whole.
* ``vk_garbage``: device blobs dropped since the last submit (the commands still use them).
* ``cursor``: the recording this state is the final state of (Vulkan replay), or None.
* ``lease``: what this state's blobs live in (a held recording), released with the state.
* ``plan_key``: the native plan key whose run (or recording) computed the blobs, or None: a
  later extract of a blob that run did not hand out teaches the plan to (``NativePlans.also``).
"""

from __future__ import annotations

from typing import Any

from ..mat import Mat


class BlobState:
    """One extractor's blobs and their bookkeeping (see the module docstring)."""

    __slots__ = (
        "mats",
        "vkmats",
        "pending",
        "shared",
        "partial",
        "vk_garbage",
        "cursor",
        "lease",
        "plan_key",
    )

    def __init__(self, consumer_counts: list[int]) -> None:
        n = len(consumer_counts)
        self.mats: list[Mat | None] = [None] * n
        self.vkmats: list[Any] = [None] * n
        self.pending = list(consumer_counts)
        self.shared: set[int] = set()
        self.partial = False
        self.vk_garbage: list[Any] = []
        self.cursor: Any = None
        self.lease: Any = None
        self.plan_key: tuple | None = None

    def release(self) -> None:
        """Give back the lease (its blobs must not be used any more) and forget the cursor."""
        lease, self.lease = self.lease, None
        self.cursor = None
        if lease is not None:
            lease.release()

    def reset(self, consumer_counts: list[int]) -> None:
        """Forget every blob: the state of a fresh extractor (of the same size)."""
        self.release()
        n = len(self.mats)
        self.mats = [None] * n
        self.vkmats = [None] * n
        self.pending = list(consumer_counts)
        self.shared.clear()
        self.vk_garbage.clear()
        self.partial = False
        self.plan_key = None

    def give(self, index: int, mat: Mat, intermediate: bool) -> None:
        """Blob ``index`` is ``mat`` (shared, not copied), given by the caller; an
        ``intermediate`` blob (one a layer could produce) makes later plans partial."""
        m = Mat()
        m.share_from(mat)
        self.mats[index] = m
        self.vkmats[index] = None
        self.shared.add(index)
        self.cursor = None  # the state no longer matches a recording's
        self.plan_key = None  # nor a native plan's
        if intermediate:
            self.partial = True  # its producers must not run

    def present(self, index: int) -> bool:
        return self.mats[index] is not None or self.vkmats[index] is not None

    def consume(self, bottoms: list[int], light: bool) -> None:
        """A layer reading ``bottoms`` ran: in light mode a blob goes after its last reader
        (a device blob waits in ``vk_garbage`` for the submit that last uses it)."""
        pending = self.pending
        for b in bottoms:
            pending[b] -= 1
            if light and pending[b] <= 0:
                self.mats[b] = None
                vk = self.vkmats[b]
                if vk is not None:
                    self.vk_garbage.append(vk)
                    self.vkmats[b] = None

    # -- snapshots ------------------------------------------------------------------------------
    def copy(self) -> BlobState:
        """The blobs and their bookkeeping, copied (the Mats themselves are shared)."""
        c = BlobState.__new__(BlobState)
        c.mats = list(self.mats)
        c.vkmats = list(self.vkmats)
        c.pending = list(self.pending)
        c.shared = set(self.shared)
        c.partial = self.partial
        c.vk_garbage = []
        c.cursor = c.lease = None
        c.plan_key = self.plan_key
        return c

    def restore(self, saved: BlobState) -> None:
        """Back to ``saved`` (a ``copy()``); the lease stays, the cursor is forgotten."""
        self.mats, self.vkmats = saved.mats, saved.vkmats
        self.pending, self.shared, self.partial = saved.pending, saved.shared, saved.partial
        self.plan_key = saved.plan_key
        self.cursor = None

    def final(self) -> tuple:
        """What a recording keeps of the state after it: which blobs have a host Mat (not the
        Mats: they are the next replay's results), the device blobs, pending and shared."""
        return (
            tuple(i for i, m in enumerate(self.mats) if m is not None),
            list(self.vkmats),
            list(self.pending),
            set(self.shared),
        )

    def restore_final(self, final: tuple, cursor: Any) -> None:
        """The state a replay of the recording ``cursor`` (whose ``final()`` is ``final``)
        leaves: host Mats the recording did not keep are dropped."""
        with_mat, vkmats, pending, shared = final
        keep = set(with_mat)
        mats = self.mats
        for i, m in enumerate(mats):
            if m is not None and i not in keep:
                mats[i] = None
        self.vkmats = list(vkmats)
        self.pending = list(pending)
        self.shared = set(shared)
        self.partial = True
        self.plan_key = None
        self.cursor = cursor
