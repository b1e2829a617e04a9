"""Where caches live by default, and the name of a device class.

One default for everything that keeps a cache without being told where: the SQLite store
``<default_cache_dir()>/pipelines.sqlite3`` (``default_store_url()``). ``python -m ncnn_c
run``, the examples and ``PipelineCache.load_cache()`` / ``save_cache()`` without a target
use it; ``python -m ncnn_c cache inspect --store URL`` looks into it. Entries are keyed by
a model key and ``device_key(vkdev)``.
"""

from __future__ import annotations

import os

from .format import CACHE_FILE_VERSION

CACHE_DIR_ENV = "NCNN_C_CACHE_DIR"
DEFAULT_STORE_FILE = "pipelines.sqlite3"
# the entry PipelineCache.load_cache()/save_cache() use without a target: not one model's,
# a cache shared by every model the user runs on the device (entries are keyed by shader)
DEFAULT_MODEL_KEY = "default"


def default_cache_dir() -> str:
    """The per-user cache directory: $NCNN_C_CACHE_DIR, else $XDG_CACHE_HOME/ncnn_c, else ~/.cache/ncnn_c."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return os.path.abspath(os.path.expanduser(env))
    xdg = os.environ.get("XDG_CACHE_HOME")
    # the XDG spec says a relative value is invalid and must be ignored
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "ncnn_c")
    return os.path.join(os.path.expanduser("~"), ".cache", "ncnn_c")


def default_store_path() -> str:
    """The default store's SQLite file: ``<default_cache_dir()>/pipelines.sqlite3``."""
    return os.path.join(default_cache_dir(), DEFAULT_STORE_FILE)


def default_store_url() -> str:
    """``sqlite:///<default_store_path()>``, for ``open_store`` and ``--store``."""
    return "sqlite:///" + default_store_path().lstrip("/")


def device_key(vkdev) -> str:
    """A stable, file-name-safe name of a device class, e.g. ``v4-10005-0000-00000001-6d657361...``.

    Cache format version, vendor id, device id, driver version and pipelineCacheUUID: two
    machines with equal keys can share a cache file. (The file itself checks more fields;
    a key that matches but a file that does not is still only a miss.) ``vkdev`` is a
    VulkanDevice or its GpuInfo.
    """
    info = getattr(vkdev, "info", vkdev)
    uuid = bytes(info.pipeline_cache_uuid)
    return (
        f"v{CACHE_FILE_VERSION}-{int(info.vendor_id):04x}-{int(info.device_id):04x}"
        f"-{int(info.driver_version):08x}-{uuid.hex()}"
    )
