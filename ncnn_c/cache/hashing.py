"""FNV-1a 32 and MurmurHash3 x86_32: the hashes of the cache file and of pipeline requests.

The C versions come from ``ncnn_c._native._hash``, built with the wheel or by ``make setup``
(``python -m ncnn_c._native.build_hash``); nothing is compiled at import. Without the
extension the pure Python versions below run instead: the same results, tens of
milliseconds per megabyte slower. ``HASH_BACKEND`` says which one is in use.
"""

from __future__ import annotations

_U32 = 0xFFFFFFFF
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
_C1 = 0xCC9E2D51
_C2 = 0x1B873593


def as_view(data) -> memoryview:
    """A flat byte view of a bytes-like object (TypeError for anything else)."""
    v = data if isinstance(data, memoryview) else memoryview(data)
    if v.ndim != 1 or v.itemsize != 1 or v.format not in ("B", "b", "c"):
        v = v.cast("B")
    return v


def fnv1a32_py(data) -> int:
    """32-bit FNV-1a in pure Python (the reference the C version is tested against)."""
    h = _FNV_OFFSET
    for b in bytes(data):
        h = ((h ^ b) * _FNV_PRIME) & _U32
    return h


def _murmur3_tail(h: int, tail: bytes, size: int) -> int:
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * _C1) & _U32
        k = ((k << 15) | (k >> 17)) & _U32
        k = (k * _C2) & _U32
        h ^= k
    h ^= size & _U32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _U32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _U32
    h ^= h >> 16
    return h


def murmur3_32_py(data, seed: int = 0) -> int:
    """MurmurHash3 x86_32 in pure Python; the per-block mixing is vectorised with numpy."""
    b = bytes(data)
    n = len(b)
    nblocks = n // 4
    h = seed & _U32
    if nblocks >= 64:
        import numpy as np

        kv = np.frombuffer(b, dtype="<u4", count=nblocks).astype(np.uint32)
        kv *= np.uint32(_C1)
        kv = (kv << np.uint32(15)) | (kv >> np.uint32(17))
        kv *= np.uint32(_C2)
        blocks = kv.tolist()
    else:
        blocks = []
        for i in range(nblocks):
            k = int.from_bytes(b[4 * i : 4 * i + 4], "little")
            k = (k * _C1) & _U32
            k = ((k << 15) | (k >> 17)) & _U32
            blocks.append((k * _C2) & _U32)
    for k in blocks:
        h ^= k
        h = ((h << 13) | (h >> 19)) & _U32
        h = (h * 5 + 0xE6546B64) & _U32
    return _murmur3_tail(h, b[4 * nblocks :], n)


try:
    from .._native._hash import ffi as _ffi
    from .._native._hash import lib as _lib
except ImportError:  # not built (a checkout before `make setup`): the pure Python hashes work
    _lib = None

if _lib is not None:

    def fnv1a32(data) -> int:
        """32-bit FNV-1a (offset basis 0x811c9dc5, prime 0x01000193) of a bytes-like object."""
        v = as_view(data)
        return _lib.ncnnc_fnv1a32(_ffi.from_buffer("uint8_t[]", v), len(v))

    def murmur3_32(data, seed: int = 0) -> int:
        """MurmurHash3 x86_32 (little-endian blocks, standard tail and fmix) of a bytes-like object."""
        v = as_view(data)
        return _lib.ncnnc_murmur3_32(_ffi.from_buffer("uint8_t[]", v), len(v), seed & _U32)

    HASH_BACKEND = "native"
else:  # pragma: no cover - depends on the checkout
    fnv1a32 = fnv1a32_py
    murmur3_32 = murmur3_32_py
    HASH_BACKEND = "python"
