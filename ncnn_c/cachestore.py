"""Pipeline cache stores, under their first import path: see ``ncnn_c.cache.stores`` and ``ncnn_c.cache.paths``."""

from __future__ import annotations

from .cache.paths import (
    CACHE_DIR_ENV,
    DEFAULT_MODEL_KEY,
    default_cache_dir,
    default_store_path,
    default_store_url,
    device_key,
)
from .cache.stores import (
    DEFAULT_TABLE,
    MAX_ENTRY_SIZE,
    MEMORY,
    CacheStore,
    CacheStoreError,
    DirectoryStore,
    PostgresStore,
    SqliteStore,
    open_store,
    redact_url,
)

__all__ = [
    "CACHE_DIR_ENV",
    "DEFAULT_MODEL_KEY",
    "DEFAULT_TABLE",
    "MAX_ENTRY_SIZE",
    "MEMORY",
    "CacheStore",
    "CacheStoreError",
    "DirectoryStore",
    "PostgresStore",
    "SqliteStore",
    "default_cache_dir",
    "default_store_path",
    "default_store_url",
    "device_key",
    "open_store",
    "redact_url",
]
