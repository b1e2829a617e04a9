"""The persistent pipeline cache without Vulkan: where it lives, its bytes, their checks, files and stores.

One module per concern, each importable on its own (nothing here imports ``ncnn_c.gpu``;
``gpu/pipelinecache.py`` and ``gpu/cacheinspect.py`` call down into this package):

* ``paths``: the per-user cache directory, the default store in it, the device key.
* ``hashing``: FNV-1a 32 and MurmurHash3 x86_32 (the prebuilt C extension, else pure Python).
* ``format``: the byte layout of a cache file, its identity, the cache key, ``encode``.
* ``checks``: the one ordered table of checks a file must pass; ``decode`` stops at the first
  failure, ``inspect`` runs them all.
* ``inspect``: the report and the verdict of ``python -m ncnn_c cache inspect|verify``.
* ``fileio``: bounded reads, atomic writes, the advisory lock, temp file cleanup.
* ``stores``: directory, SQLite and PostgreSQL stores of cache files.

The format is documented in ``docs/cache-format.md``, stores in ``docs/cache-stores.md``.
"""
