"""Builds ``ncnn_c/_native/_hash*.so``: FNV-1a 32 and MurmurHash3 x86_32 in C (cffi API mode).

The pipeline cache file hashes every SPIR-V byte two or three times on load and on save;
in pure Python that costs tens of milliseconds per megabyte, in C it is noise.
``ncnn_c.gpu.cachefile`` uses this extension when it can be imported and falls back to
its pure Python versions otherwise; both must give identical results.

Run ``python -m ncnn_c._native.build_hash`` (add ``--force`` to rebuild). Building is
skipped when an extension built from the same C source already exists.
"""

from __future__ import annotations

import sys

import cffi

from . import _build
from ._build import BuildError  # noqa: F401  (part of this module's interface)

MODULE = "_hash"

CDEF = """
uint32_t ncnnc_fnv1a32(const uint8_t* data, size_t size);
uint32_t ncnnc_murmur3_32(const uint8_t* data, size_t size, uint32_t seed);
"""

# Blocks are assembled byte by byte so that the result does not depend on the host's
# byte order or on alignment; compilers turn this into a single load on x86/arm64.
CSOURCE = r"""
#include <stdint.h>
#include <stddef.h>

const char ncnnc_hash_build_stamp[] = "NCNNC_STAMP:@STAMP@";

uint32_t ncnnc_fnv1a32(const uint8_t* data, size_t size)
{
    uint32_t h = 0x811c9dc5u;
    size_t i;
    for (i = 0; i < size; i++)
    {
        h ^= data[i];
        h *= 0x01000193u;
    }
    return h;
}

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

uint32_t ncnnc_murmur3_32(const uint8_t* data, size_t size, uint32_t seed)
{
    const uint32_t c1 = 0xcc9e2d51u;
    const uint32_t c2 = 0x1b873593u;
    uint32_t h = seed;
    uint32_t k;
    size_t nblocks = size / 4;
    size_t i;
    const uint8_t* tail;

    for (i = 0; i < nblocks; i++)
    {
        const uint8_t* p = data + i * 4;
        k = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5u + 0xe6546b64u;
    }

    tail = data + nblocks * 4;
    k = 0;
    switch (size & 3)
    {
    case 3:
        k ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        k ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        k ^= (uint32_t)tail[0];
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
    }

    h ^= (uint32_t)size;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}
"""


def _stamp() -> str:
    return _build.stamp(CDEF, CSOURCE)


def _ffibuilder() -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source(
        f"ncnn_c._native.{MODULE}", CSOURCE.replace("@STAMP@", _stamp()), extra_compile_args=["-O2"]
    )
    return ffi


def extension_path() -> str:
    return _build.extension_path(MODULE)


def is_current(path: str | None = None) -> bool:
    """Whether an extension built from this exact C source exists."""
    return _build.is_current(path or extension_path(), _stamp())


def build(force: bool = False, verbose: bool = False) -> str:
    """Build the extension next to this file; returns its path. Raises BuildError."""
    target = extension_path()
    if not force and is_current(target):
        return target
    return _build.compile_and_install(_ffibuilder(), MODULE, target, verbose)


if __name__ == "__main__":
    sys.exit(_build.main(build, sys.argv[1:]))
