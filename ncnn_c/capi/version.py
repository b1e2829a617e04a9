"""Version: ``ncnn_version`` and ``ncnn_version_number``."""

from __future__ import annotations

from .. import __version__
from ._core import INT, STR, _export

_VERSION_PARTS = tuple(int(x) for x in __version__.split(".")[:3])


@_export(STR)
def ncnn_version() -> str:
    return __version__


@_export(INT)
def ncnn_version_number() -> int:
    major, minor, patch = (_VERSION_PARTS + (0, 0, 0))[:3]
    return major * 10000 + minor * 100 + patch
