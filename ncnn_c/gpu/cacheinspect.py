"""What a pipeline cache file holds, and whether this machine and library would accept it.

The library side of ``python -m ncnn_c cache inspect FILE`` and ``cache verify FILE``: the
report and the verdict are ``ncnn_c.cache.inspect``'s, over the one table of checks that
``PipelineCache.load_cache`` runs too; this module supplies what this machine expects (the
device's identity, this library's shaders, ``pipelinecache.reader_expect``).

A device is optional. Without one (``device=False``, or no Vulkan device at all) the checks
that need it (vendor, driver, UUID, driver blob header) are reported as not checked, and the
verdict covers the rest: format, checksums, layout, entries against this build's shaders.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..cache import inspect as _inspect
from ..cache.checks import SQLITE_MAGIC, Expect
from ..cache.format import Identity, identity_of, resolve_key
from ..cache.inspect import format_report
from . import compiler

__all__ = ["SQLITE_MAGIC", "foreign_format", "format_report", "inspect", "verify"]

foreign_format = _inspect.foreign_reason


def _identity(device) -> Identity | None:
    """The identity of ``device`` (a VulkanDevice, GpuInfo or index); None for False, or for
    None (the default GPU) when there is no GPU.

    An index that names no device raises ValueError: silently checking nothing would let
    ``--device 7`` report a file as accepted.
    """
    if device is False:
        return None
    from . import device as _device
    from .pipelinecache import NCNN_VERSION

    info = getattr(device, "info", device)
    if isinstance(info, int) and not isinstance(info, bool):
        count = _device.get_gpu_count()
        if not 0 <= info < count:
            raise ValueError(f"device index {info}: there are {count} Vulkan devices")
    if info is None or isinstance(info, int):
        try:
            if _device.get_gpu_count() == 0:
                return None
            info = _device.get_gpu_info(info)
        except Exception:
            return None
        if info is None:
            return None
    return identity_of(info, NCNN_VERSION)


def _shader_name(sid: int) -> str | None:
    try:
        index = compiler.index_of_shader_id(sid)
        return compiler.shader_name(index) if index >= 0 else None
    except Exception:
        return None


def _expect(device, key) -> Expect:
    from .pipelinecache import reader_expect

    # the device first: a bad index is the caller's error, whatever the file holds
    return dataclasses.replace(reader_expect(_identity(device), resolve_key(key)), shader_name=_shader_name)


def inspect(src, device=None, key: bytes | str | None = None) -> dict[str, Any]:
    """Everything about a cache file (bytes-like, path or binary file object) as a dict.

    ``device``: a VulkanDevice, GpuInfo or device index to check against; None for the
    default GPU if there is one; False for no device checks. ``key`` (else
    ``$NCNN_C_CACHE_KEY``): the cache key to check the MAC with. Never raises on bad data;
    an index that names no device raises ValueError.
    """
    return _inspect.report(src, _expect(device, key))


def verify(src, device=None, key: bytes | str | None = None) -> tuple[bool, str]:
    """(would ``load_cache`` accept it, why): the first failing check, as ``load_cache`` reports it.

    ``device`` and ``key`` as for ``inspect``. Without a device, the identity fields and the
    driver blob header are not checked and the reason says so.
    """
    return _inspect.verdict(src, _expect(device, key))
