"""The Vulkan device a net runs on: chosen by the user, or the default GPU, made on a thread.

Making a device takes long on some drivers (0.4 s on an H200: the instance and the
device), so ``set_vulkan_device(index)`` and a load_param that wants the GPU start it on a
thread of their own and go on (the param is parsed meanwhile); the first reader of
``DeviceChoice.vkdev`` waits for it. Only the device module is imported by that thread, so
that two threads never import it at once, and the caller's thread imports the other GPU
modules while the driver works.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ...option import Option
from . import api

log = logging.getLogger("ncnn_c")


class DeviceChoice:
    """The device of one net (None: no GPU chosen, or none available), maybe still coming."""

    __slots__ = ("_vkdev", "_pending")

    def __init__(self) -> None:
        self._vkdev: Any = None
        # the device being made on a thread (set_vulkan_device(index), load_param)
        self._pending: Future | None = None

    @property
    def vkdev(self) -> Any:
        """The VulkanDevice; waits for one being made on a thread."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            self._vkdev = pending.result()
        return self._vkdev

    @vkdev.setter
    def vkdev(self, vkdev: Any) -> None:
        self._pending = None
        self._vkdev = vkdev

    @property
    def made(self) -> bool:
        """A device is there (not one still being made: does not wait for it)."""
        return self._vkdev is not None

    @property
    def coming(self) -> bool:
        """A device is being made on a thread and is not there yet."""
        pending = self._pending
        return pending is not None and not pending.done()

    def set(self, device) -> None:
        """set_vulkan_device: a VulkanDevice, a GPU index (made on a thread), or None."""
        if device is None:
            self.vkdev = None
        elif isinstance(device, int):
            self._make(_device_at, device)
        else:
            self.vkdev = device

    def start(self, opt: Option) -> None:
        """Start making the device ``opt`` asks for on a thread, unless one is there or coming."""
        if self._pending is None and self._vkdev is None:
            self._make(_default_device, opt.vulkan_device_index)

    def acquire(self, opt: Option) -> Any:
        """The device, the default one of ``opt`` made now when none was chosen; None: no GPU."""
        if self.vkdev is None:  # none chosen, or set_vulkan_device's GPU has none
            self.vkdev = _default_device(None, opt.vulkan_device_index)
        return self.vkdev

    def check(self, opt: Option, where: str) -> None:
        """ncnn runs silently on the CPU without a device; we say so, and turn Vulkan off."""
        if opt.use_vulkan_compute and self.acquire(opt) is None:
            log.warning(
                "%s: use_vulkan_compute is set but no Vulkan device is available; running on the CPU", where
            )
            opt.use_vulkan_compute = False

    def _make(self, find: Callable[[Any, Any], Any], arg) -> None:
        """Start ``find(gpu, arg)`` (the device, or None: logged) on a thread of its own; the
        device module is imported here first. Only that module: the other GPU modules are
        imported by the caller's thread while the driver starts on the other one."""
        try:
            gpu = api._devices()
        except Exception:  # noqa: BLE001 - reported by find, the net stays on the CPU
            self.vkdev = find(None, arg)
            return
        pending: Future = Future()

        def run() -> None:
            try:
                pending.set_result(find(gpu, arg))
            except BaseException as e:  # noqa: BLE001 - handed to the thread that waits
                pending.set_exception(e)

        self._vkdev = None
        self._pending = pending
        threading.Thread(target=run, name="ncnn_c-vulkan-device").start()


def _device_at(gpu, index: int):
    """set_vulkan_device(index): that GPU's device, None (logged) when there is none."""
    try:
        if gpu is None:
            gpu = api._devices()
        return gpu.get_gpu_device(index)
    except Exception as e:  # noqa: BLE001 - reported, the net stays on the CPU
        log.error("set_vulkan_device: no Vulkan device %d: %s", index, e)
        return None


def _default_device(gpu, index):
    """The device of GPU ``index`` (None or < 0: the default GPU); None when no GPU."""
    try:
        if gpu is None:
            gpu = api._devices()
        if gpu.get_gpu_count() <= 0:
            return None
        if index is None or index < 0:
            index = gpu.get_default_gpu_index()
        return gpu.get_gpu_device(index)
    except Exception as e:  # noqa: BLE001 - any failure means "no GPU": fall back
        log.warning("Vulkan unavailable (%s: %s)", type(e).__name__, e)
        return None
