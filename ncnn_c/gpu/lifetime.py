"""Keep a GPU object alive while work that uses its Vulkan handles is in flight.

An inference records and submits command buffers that name pipelines, buffers and the
VkDevice itself. Destroying any of them while a command is recorded or running is undefined
behaviour in Vulkan (a crash in the driver, not an error). ``UseCount`` is the rule that
prevents it: every inference holds a use of the device and of its pipeline cache for its
whole GPU part; ``close()`` (taken by ``PipelineCache.clear()/destroy()`` and by
``VulkanDevice.destroy()``) refuses new uses, waits for the running ones to end and only
then lets the caller free the handles. An inference that asks for a use after that gets
``False`` and fails cleanly (ret -1, logged) instead of touching freed handles.

A thread that holds a use and then closes the same object would wait for itself: that is
refused with ``NcnnError`` rather than hanging.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from ..errors import NcnnError


class UseCount:
    """Uses in flight of one object, and a gate that ``close()`` shuts."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._cv = threading.Condition(threading.Lock())
        self._users: dict[int, int] = {}  # thread id -> uses held
        self._closing = 0  # close() calls under way (clear() reopens when done)
        self._closed = False

    def enter(self) -> bool:
        """Take one use; False when the object is closed or being closed."""
        me = threading.get_ident()
        with self._cv:
            if self._closed or (self._closing and me not in self._users):
                return False
            self._users[me] = self._users.get(me, 0) + 1
            return True

    def exit(self) -> None:
        me = threading.get_ident()
        with self._cv:
            n = self._users.get(me, 0) - 1
            if n > 0:
                self._users[me] = n
            else:
                self._users.pop(me, None)
                if not self._users:
                    self._cv.notify_all()

    @contextlib.contextmanager
    def drained(self, final: bool) -> Iterator[None]:
        """Shut the gate and wait until no use is in flight; the body frees the handles.
        ``final`` keeps the gate shut (destroy); otherwise it opens again (clear)."""
        me = threading.get_ident()
        with self._cv:
            if me in self._users:
                raise NcnnError(
                    f"{self.what}: cannot be cleared or destroyed from a thread that is running an "
                    "inference on it"
                )
            self._closing += 1
            try:
                while self._users:
                    self._cv.wait()
            except BaseException:
                self._closing -= 1
                raise
        try:
            yield
        finally:
            with self._cv:
                self._closing -= 1
                if final:
                    self._closed = True

    def close(self) -> None:
        """Shut the gate for good once no use is in flight (the owner frees its handles next)."""
        with self.drained(final=True):
            pass

    @property
    def closed(self) -> bool:
        return self._closed

    def in_flight(self) -> int:
        with self._cv:
            return sum(self._users.values())
